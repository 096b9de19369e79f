// SPDX-License-Identifier: Apache-2.0
/* kmodel v5: the nncase 1.x release groups okpu_options.v5_release selects (kmodel-v5.md section 9). A v5 file does
 * not record the compiler, and the stackvm's tensor-function numbering changed between releases; the loader detects
 * the group from the code (the newest group that decodes it), and this option overrides that for files two groups
 * decode alike. The bindings turn a release name ("1.9.0", "1.9", "1.0.0-rc1", a PyPI version "1.9.0.20230322")
 * into a group with okpu_v5_release_parse. */
#ifndef OKPU_KMODEL_KMODEL_V5_RELEASE_H
#define OKPU_KMODEL_KMODEL_V5_RELEASE_H

/* okpu_options.v5_release: 0 = detect, else one of these (oldest first) */
enum {
    OKPU_V5_RELEASE_DETECT = 0,
    OKPU_V5_RELEASE_1_0_BETA = 1, /* 1.0.0-beta1 .. 1.0.0-rc1 */
    OKPU_V5_RELEASE_1_0_0 = 2,
    OKPU_V5_RELEASE_1_0_TCU = 3, /* 1.0.0-tcu_num */
    OKPU_V5_RELEASE_1_1 = 4,
    OKPU_V5_RELEASE_1_2 = 5,
    OKPU_V5_RELEASE_1_3 = 6, /* 1.3.0-rc1 .. 1.3.x */
    OKPU_V5_RELEASE_1_4 = 7, /* 1.4.0 .. 1.5.0 */
    OKPU_V5_RELEASE_1_6 = 8, /* 1.6.0 .. 1.9.0 */
    OKPU_V5_RELEASES = 8
};

/* The group a release name selects (1 .. OKPU_V5_RELEASES), 0 for "detect", -1 for anything else. */
int okpu_v5_release_parse(const char *name);
/* The group's name ("1.6.0 .. 1.9.0"), or "detect" / "?". */
const char *okpu_v5_release_name(int release);
/* The accepted names, for messages. */
extern const char okpu_v5_release_names[];

#endif
