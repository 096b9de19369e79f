// SPDX-License-Identifier: Apache-2.0
/* Backend selection: the emulator everywhere; the K210's KPU through a port (the board's own in board builds). */
#include "kpu_backend.h"

#include "../core/error.h"

void okpu_kpu_job_batch(const okpu_kpu_layer_job *job, uint32_t b, uint8_t *raw, okpu_kpu_layer_job *out)
{
    const uint32_t src = job->args.image_src_addr + b * job->in_rows, dst = job->args.image_dst_addr + b * job->out_rows;

    *out = *job;
    out->args.image_src_addr = src;
    out->args.image_dst_addr = dst;
    out->main_out = job->main_out ? job->main_out + (size_t)b * job->main_out_stride : NULL;
    out->batches = 1;
    if (raw) {
        /* word 1: [14:0] image_src_addr, [46:32] image_dst_addr */
        raw[8] = (uint8_t)src;
        raw[9] = (uint8_t)((raw[9] & 0x80u) | ((src >> 8) & 0x7Fu));
        raw[12] = (uint8_t)dst;
        raw[13] = (uint8_t)((raw[13] & 0x80u) | ((dst >> 8) & 0x7Fu));
        out->raw_args = raw;
    }
}

int okpu_kpu_reads_output_of(const okpu_kpu_layer_job *prev, const okpu_kpu_layer_job *next)
{
    return prev->batches <= 1u && next->batches <= 1u && prev->args.image_dst_addr == next->args.image_src_addr &&
           prev->args.out_width == next->args.in_width && prev->args.out_height == next->args.in_height &&
           prev->args.out_channels == next->args.in_channels;
}

okpu_kpu_backend *okpu_kpu_backend_create(const okpu_options *opts, okpu_error *err)
{
    okpu_backend_kind kind = opts ? opts->backend : OKPU_BACKEND_EMULATOR;

    switch (kind) {
    case OKPU_BACKEND_EMULATOR:
        return okpu_kpu_emu_create(opts, err);
    case OKPU_BACKEND_K210:
        if (opts->k210_port)
            return okpu_kpu_k210_create_on(opts->k210_port, opts, err);
#ifdef OKPU_HAVE_K210_HW
        return okpu_kpu_k210_create(opts, err);
#else
        okpu_fail(err, OKPU_ERR_NOT_IMPLEMENT, -1, -1,
                  "the K210 hardware KPU backend reaches the chip only in board builds (compiled with "
                  "OKPU_HAVE_K210_HW); use the emulator backend on this machine");
        return NULL;
#endif
    }
    okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "unknown KPU backend %d: expected %d (emulator) or %d (K210)", (int)kind,
              (int)OKPU_BACKEND_EMULATOR, (int)OKPU_BACKEND_K210);
    return NULL;
}
