// SPDX-License-Identifier: Apache-2.0
/* The kmodel format readers this core is built with. */
#include "kmodel_v5.h"
#include "model.h"

static const okpu_format *const formats[] = {
    &okpu_format_v3,
    &okpu_format_v4,
    &okpu_format_v5,
};

const okpu_format *okpu_find_format(int version)
{
    size_t i;
    for (i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i]->version == version)
            return formats[i];
    return NULL;
}
