// SPDX-License-Identifier: Apache-2.0
/* The error text both bindings raise (okpu_error_format) and the float reader they share (core/floats.h):
 * wording, the empty-message and unknown-code cases, truncation, and the byte decoding. */
#include <stdlib.h>

#include "core/bytes.h"
#include "core/error.h"
#include "core/floats.h"
#include "ctest.h"

static void test_format(void)
{
    okpu_error e;
    char text[OKPU_ERROR_TEXT_SIZE], small[16];
    size_t n;
    okpu_fail(&e, OKPU_ERR_KMODEL_FORMAT, 3, 120, "layer 3 at offset 120: body too short");
    n = okpu_error_format(&e, "load", text, sizeof text);
    CHECK(strcmp(text, "[MAIXPY]kpu: load error:2003, ERR_KMODEL_FORMAT: layer 3 at offset 120: body too short") == 0,
          "%s", text);
    CHECK(n == strlen(text), "%lu", (unsigned long)n);
    okpu_error_format(&e, NULL, text, sizeof text);
    CHECK(strcmp(text, "[MAIXPY]kpu: error:2003, ERR_KMODEL_FORMAT: layer 3 at offset 120: body too short") == 0,
          "%s", text);
    okpu_error_format(&e, "", text, sizeof text);
    CHECK(strncmp(text, "[MAIXPY]kpu: error:2003,", 24) == 0, "%s", text);
    okpu_error_format(&e, "check img format err!", text, sizeof text);
    CHECK(strncmp(text, "[MAIXPY]kpu: check img format err! error:2003, ", 47) == 0, "%s", text);

    okpu_error_clear(&e);
    okpu_error_format(&e, "run", text, sizeof text); /* OK is no error: reported as unknown, never "error:0" */
    CHECK(strcmp(text, "[MAIXPY]kpu: run error:2015, ERR_UNKNOWN: (no details)") == 0, "%s", text);
    okpu_error_format(NULL, "run", text, sizeof text);
    CHECK(strcmp(text, "[MAIXPY]kpu: run error:2015, ERR_UNKNOWN: (no details)") == 0, "%s", text);
    e.code = 9999;
    okpu_error_format(&e, "run", text, sizeof text);
    CHECK(strcmp(text, "[MAIXPY]kpu: run error:9999, ERR_UNKNOWN: (no details)") == 0, "%s", text);

    /* snprintf semantics: truncated and terminated, the full length returned, a NULL buffer only measures */
    okpu_fail(&e, OKPU_ERR_PARAM, -1, -1, "x");
    n = okpu_error_format(&e, "load", small, sizeof small);
    CHECK(n == strlen("[MAIXPY]kpu: load error:2001, ERR_PARAM: x") && strlen(small) == sizeof small - 1, "%lu",
          (unsigned long)n);
    CHECK(okpu_error_format(&e, "load", NULL, 0) == n, "measure");

    /* the longest message fits OKPU_ERROR_TEXT_SIZE */
    memset(e.message, 'm', sizeof e.message - 1);
    e.message[sizeof e.message - 1] = '\0';
    n = okpu_error_format(&e, "check img format err!", text, sizeof text);
    CHECK(n < sizeof text && text[n - 1] == 'm', "%lu", (unsigned long)n);
}

static void test_floats(void)
{
    okpu_error e;
    size_t count = 99;
    uint8_t raw[13];
    float out[3];
    char text[OKPU_ERROR_TEXT_SIZE];
    CHECK(okpu_floats_count_bytes(12, -1, "yolo2 output", &count, &e) == OKPU_OK && count == 3, "12 bytes");
    CHECK(okpu_floats_count_bytes(12, 3, "yolo2 output", &count, &e) == OKPU_OK, "expect 3");
    CHECK(okpu_floats_count_bytes(13, -1, "yolo2 output", &count, &e) == OKPU_ERR_PARAM, "13 bytes");
    okpu_error_format(&e, NULL, text, sizeof text);
    CHECK(strcmp(text, "[MAIXPY]kpu: error:2001, ERR_PARAM: yolo2 output: 13 bytes is not a whole number of float32 "
                       "values") == 0, "%s", text);
    CHECK(okpu_floats_count_bytes(12, 4, "yolo2 output", &count, &e) == OKPU_ERR_PARAM, "expect 4");
    CHECK(strcmp(e.message, "yolo2 output has 3 floats, expected 4") == 0, "%s", e.message);
    CHECK(okpu_floats_check_count(5, -1, "anchors", &e) == OKPU_OK, "any count");
    CHECK(okpu_floats_check_count(5, 6, "anchors", &e) == OKPU_ERR_PARAM &&
          strcmp(e.message, "anchors has 5 values, expected 6") == 0, "%s", e.message);
    /* little-endian, from an odd address */
    okpu_wr_f32(raw + 1, 1.5f);
    okpu_wr_f32(raw + 5, -0.25f);
    okpu_wr_f32(raw + 9, 3e38f);
    okpu_floats_read(raw + 1, 3, out);
    CHECK(out[0] == 1.5f && out[1] == -0.25f && out[2] == 3e38f, "%g %g %g", out[0], out[1], out[2]);
    raw[1] = 0x00, raw[2] = 0x00, raw[3] = 0x80, raw[4] = 0x3F; /* 1.0f as bytes */
    okpu_floats_read(raw + 1, 1, out);
    CHECK(out[0] == 1.0f, "%g", out[0]);
}

int main(void)
{
    test_format();
    test_floats();
    return ctest_summary();
}
