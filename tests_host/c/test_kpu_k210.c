/* The K210 hardware backend (c_src/kpu/kpu_k210.c) driven against a simulated KPU peripheral.
 *
 * The simulated peripheral behaves like the register block of docs/kpu-reference.md section 7: it collects the 12 words
 * pushed into the layer FIFO, resolves the three table addresses written into them, runs the layer on an emulator
 * that stands for the silicon (sharing the KPU RAM the backend sees), and raises calc_done after a few status polls.
 * It knows nothing of the model: if the backend patched an address, a row index or a flag wrongly, the outputs
 * below would differ from the emulator backend's. Also checked: the register sequence per layer, the 8-/16-bit mode
 * switch, a hung KPU, tables the KPU cannot reach or that are misaligned, and an incomplete port.
 *
 * Whole models (the repo's digits model always; real v3/v4 models from ../shared/testdata when present) must give
 * byte-identical outputs on both backends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c_src/kpu/kpu_backend.h"
#include "../../c_src/okpu.h"
#include "ctest.h"
#include "model_run.h"
#include "read_file.h"

#define SIM_TABLE_BASE 0x00100000u
#define SIM_MAX_TABLES 8192u
#define SIM_LOG_MAX 64u

enum { REG_FIFO = 0x00, REG_STATUS = 0x08, REG_RAW = 0x10, REG_MASK = 0x18, REG_CLEAR = 0x20, REG_EIGHT_BIT = 0x40 };

typedef struct reg_access {
    char op; /* 'w' or 'r' */
    uint32_t offset;
    uint64_t value;
} reg_access;

typedef struct sim_kpu {
    okpu_kpu_backend *silicon; /* the emulator standing for the KPU's datapath */
    uint64_t int_raw, int_mask, eight_bit, fifo_threshold;
    uint64_t fifo[12];
    unsigned fifo_n;
    const void *tables[SIM_MAX_TABLES];
    unsigned n_tables;
    unsigned latency;       /* status polls before calc_done shows */
    unsigned polls_left;
    int hang;               /* never finish */
    int misalign;           /* hand out addresses off by 4 */
    unsigned layers_run;
    int bad_words;           /* a pushed layer without int_en, with send_data_out, or with an unknown table */
    reg_access log[SIM_LOG_MAX];
    unsigned log_n;
    int silicon_rc;
    okpu_error silicon_err;
} sim_kpu;

static void sim_log(sim_kpu *s, char op, uint32_t offset, uint64_t value)
{
    if (s->log_n < SIM_LOG_MAX) {
        s->log[s->log_n].op = op;
        s->log[s->log_n].offset = offset;
        s->log[s->log_n].value = value;
        s->log_n++;
    }
}

static const void *sim_resolve(const sim_kpu *s, uint64_t addr)
{
    uint64_t index;
    if (addr < SIM_TABLE_BASE || (addr - SIM_TABLE_BASE) % 16u)
        return NULL;
    index = (addr - SIM_TABLE_BASE) / 16u;
    return index < s->n_tables ? s->tables[index] : NULL;
}

static void store_word(uint8_t raw[KPU_ARGS_BYTES], unsigned index, uint64_t value)
{
    unsigned b;
    for (b = 0; b < 8; b++)
        raw[8 * index + b] = (uint8_t)(value >> (8 * b));
}

/* The 12 words of the layer a run pushed first, from the register log (entries 3..14: after the 8-bit mode, the
 * interrupt clear and the mask writes). */
static void logged_words(const sim_kpu *s, uint8_t raw[KPU_ARGS_BYTES])
{
    unsigned w;
    for (w = 0; w < 12; w++)
        store_word(raw, w, s->log[3 + w].value);
}

/* The datapath: the 12 words as the hardware reads them. */
static void sim_execute(sim_kpu *s)
{
    uint8_t raw[KPU_ARGS_BYTES];
    okpu_kpu_layer_job job;
    unsigned i;

    for (i = 0; i < 12; i++)
        store_word(raw, i, s->fifo[i]);
    memset(&job, 0, sizeof job);
    job.raw_args = raw;
    okpu_kpu_args_decode(raw, &job.args);
    job.bn = sim_resolve(s, job.args.bwsx_base_addr);
    job.weights = sim_resolve(s, job.args.para_start_addr);
    job.act = sim_resolve(s, job.args.active_addr);
    job.eight_bit = (int)(s->eight_bit & 1u);
    job.layer = (int)s->layers_run;
    if (!job.args.int_en || job.args.send_data_out || !job.bn || !job.weights || !job.act) {
        s->bad_words++;
        return;
    }
    s->silicon_rc = s->silicon->run_layer(s->silicon, &job, &s->silicon_err);
    s->layers_run++;
    s->int_raw |= 1u; /* calc_done */
    s->polls_left = s->latency;
}

static void sim_write(void *ctx, uint32_t offset, uint64_t value)
{
    sim_kpu *s = ctx;
    sim_log(s, 'w', offset, value);
    switch (offset) {
    case REG_FIFO:
        s->fifo[s->fifo_n++] = value;
        if (s->fifo_n == 12) {
            s->fifo_n = 0;
            if (!s->hang)
                sim_execute(s);
        }
        break;
    case REG_CLEAR:
        s->int_raw &= ~value;
        break;
    case REG_MASK:
        s->int_mask = value;
        break;
    case REG_EIGHT_BIT:
        s->eight_bit = value;
        break;
    case 0x28:
        s->fifo_threshold = value;
        break;
    default:
        break;
    }
}

static uint64_t sim_read(void *ctx, uint32_t offset)
{
    sim_kpu *s = ctx;
    sim_log(s, 'r', offset, 0);
    if (offset == REG_STATUS) {
        if (s->polls_left) {
            s->polls_left--;
            return 0;
        }
        return s->int_raw & ~s->int_mask;
    }
    return offset == REG_RAW ? s->int_raw : 0;
}

static int sim_address(void *ctx, const void *p, uint32_t *addr)
{
    sim_kpu *s = ctx;
    unsigned i;
    for (i = 0; i < s->n_tables && s->tables[i] != p; i++)
        ;
    if (i == s->n_tables) {
        if (s->n_tables == SIM_MAX_TABLES)
            return 1;
        s->tables[s->n_tables++] = p;
    }
    *addr = SIM_TABLE_BASE + 16u * i + (s->misalign ? 4u : 0u);
    return 0;
}

static void sim_init(sim_kpu *s, okpu_k210_port *port)
{
    okpu_error err;
    memset(s, 0, sizeof *s);
    s->silicon = okpu_kpu_emu_create(NULL, &err);
    s->latency = 3;
    memset(port, 0, sizeof *port);
    port->ctx = s;
    port->read_reg = sim_read;
    port->write_reg = sim_write;
    port->kpu_ram = s->silicon->ram;
    port->kpu_address = sim_address;
    port->max_polls = 1000;
}

static void sim_free(sim_kpu *s)
{
    s->silicon->destroy(s->silicon);
}

/* ---- whole models: K210 backend over the simulated peripheral vs the emulator backend ---- */

static void compare_model(const char *path, int required)
{
    okpu_options emu_opts, hw_opts;
    okpu_k210_port port;
    sim_kpu sim;
    okpu_model *a, *b;
    uint8_t *data;
    size_t size;
    int i, kpu_layers = 0;

    data = read_model(path, &size, required);
    if (!data)
        return;
    sim_init(&sim, &port);
    okpu_options_default(&emu_opts);
    hw_opts = emu_opts;
    hw_opts.backend = OKPU_BACKEND_K210;
    hw_opts.k210_port = &port;
    a = load_and_run(data, size, &emu_opts, 12345u, path);
    b = load_and_run(data, size, &hw_opts, 12345u, path);
    if (a && b) {
        for (i = 0; i < okpu_model_layer_count(a); i++) {
            okpu_layer_info li;
            okpu_model_layer_info(a, i, &li);
            kpu_layers += li.is_kpu;
        }
        CHECK(sim.layers_run == (unsigned)kpu_layers,
              "%s: the peripheral ran %u layers, the model has %d KPU layers", path, sim.layers_run, kpu_layers);
        CHECK(sim.bad_words == 0 && sim.silicon_rc == OKPU_OK, "%s: %d malformed pushes, silicon: %s", path,
              sim.bad_words, sim.silicon_err.message);
        CHECK(okpu_model_kpu_ram(b) == port.kpu_ram, "%s: the hardware backend shows the chip's KPU RAM", path);
        CHECK(memcmp(okpu_model_kpu_ram(a), okpu_model_kpu_ram(b), OKPU_KPU_RAM_SIZE) == 0,
              "%s: KPU RAM after the run differs between the emulator and the chip", path);
        for (i = 0; i < okpu_model_output_count(a); i++) {
            okpu_tensor ta, tb;
            const uint8_t *da, *db;
            okpu_error err;
            int ra = okpu_model_output(a, i, &ta, &da, &err), rb = okpu_model_output(b, i, &tb, &db, &err);
            CHECK(ra == OKPU_OK && rb == OKPU_OK && ta.bytes == tb.bytes && memcmp(da, db, ta.bytes) == 0,
                  "%s: output %d differs between the emulator and the K210 backend", path, i);
        }
        printf("%s: %d KPU layers, outputs identical on both backends\n", path, kpu_layers);
    }
    okpu_model_free(a);
    okpu_model_free(b);
    sim_free(&sim);
    free(data);
}

static void test_models(void)
{
    static const char *const real[] = {
        "face_detect_yolo2_v3_maixpy/facedetect.kmodel", "yolo2_voc20_v3_nncase_rc5/yolo.kmodel",
        "yolo2_voc20_v4_nncase/yolo.kmodel", "yolo2_voc20_v4_nncase/yolo_v0.2.0-alpha1_cpu_maxpool.kmodel",
        "mnist_v3_maixpy/mnist.kmodel", "ulffd_face_v4_nncase/slim-320.kmodel"};

    on_test_models(compare_model, real, sizeof real / sizeof real[0]);
}

/* ---- one layer: the register sequence and the words ---- */

static okpu_model *digits_on(const okpu_k210_port *port, okpu_error *err, uint8_t **data)
{
    okpu_options o;
    size_t size;
    okpu_model *m;
    okpu_tensor t;
    uint8_t *input;

    *data = read_file("examples/models/digits.kmodel", &size);
    okpu_options_default(&o);
    o.backend = OKPU_BACKEND_K210;
    o.k210_port = port;
    m = *data ? okpu_model_load(*data, size, &o, err) : NULL;
    if (!m)
        return NULL;
    okpu_model_input(m, 0, &t);
    input = calloc(t.bytes, 1);
    okpu_model_set_input(m, 0, input, t.bytes, err);
    free(input);
    return m;
}

static void test_register_sequence(void)
{
    okpu_k210_port port;
    sim_kpu sim;
    okpu_error err;
    uint8_t *data = NULL;
    okpu_model *m;
    okpu_layer_info li;
    unsigned i, first_kpu = 0;
    int rc;

    sim_init(&sim, &port);
    m = digits_on(&port, &err, &data);
    CHECK(m != NULL, "digits model: %s", m ? "" : err.message);
    if (!m) {
        sim_free(&sim);
        free(data);
        return;
    }
    /* creation: interrupts cleared and masked, FIFO thresholds as the SDK sets them */
    CHECK(sim.log_n >= 3 && sim.log[0].offset == REG_CLEAR && sim.log[0].value == 7 && sim.log[1].offset == REG_MASK &&
              sim.log[1].value == 7 && sim.log[2].offset == 0x28 && sim.fifo_threshold == 0x1A,
          "creation sequence: clear 7, mask 7, thresholds 0x1A");
    while (okpu_model_layer_info(m, (int)first_kpu, &li) == OKPU_OK && !li.is_kpu)
        first_kpu++;
    sim.log_n = 0;
    rc = okpu_model_run(m, (int)first_kpu + 1, &err);
    CHECK(rc == OKPU_OK, "run to the first KPU layer: %s", err.message);
    /* per layer: 8-bit mode, clear all, unmask calc_done only, 12 FIFO words, status polls, clear, mask all */
    CHECK(sim.log_n >= 3 + 12 + 4 + 2, "%u register accesses", sim.log_n);
    CHECK(sim.log[0].op == 'w' && sim.log[0].offset == REG_EIGHT_BIT && sim.log[0].value == 1, "8-bit mode first");
    CHECK(sim.log[1].offset == REG_CLEAR && sim.log[1].value == 7, "interrupts cleared before the layer");
    CHECK(sim.log[2].offset == REG_MASK && sim.log[2].value == 6, "only calc_done unmasked");
    for (i = 0; i < 12; i++)
        CHECK(sim.log[3 + i].op == 'w' && sim.log[3 + i].offset == REG_FIFO, "word %u goes to the layer FIFO", i);
    for (i = 15; i < 15 + sim.latency + 1; i++)
        CHECK(sim.log[i].op == 'r' && sim.log[i].offset == REG_STATUS, "access %u polls the status", i);
    CHECK(sim.log[i].offset == REG_CLEAR && sim.log[i].value == 7 && sim.log[i + 1].offset == REG_MASK &&
              sim.log[i + 1].value == 7,
          "calc_done cleared and everything masked after the layer");
    CHECK(sim.layers_run == 1 && sim.bad_words == 0, "%u layers, %d bad pushes", sim.layers_run, sim.bad_words);
    /* the words: the stored argument with int_en set, send_data_out clear, and table addresses filled in */
    {
        okpu_kpu_args pushed;
        uint8_t raw[KPU_ARGS_BYTES];
        logged_words(&sim, raw);
        okpu_kpu_args_decode(raw, &pushed);
        CHECK(pushed.int_en == 1 && pushed.send_data_out == 0, "int_en %u send_data_out %u", pushed.int_en,
              pushed.send_data_out);
        CHECK(pushed.in_width == li.wi && pushed.in_height == li.hi && pushed.in_channels == li.chi &&
                  pushed.out_channels == li.cho,
              "shape fields reach the KPU unchanged");
        CHECK(sim_resolve(&sim, pushed.bwsx_base_addr) && sim_resolve(&sim, pushed.para_start_addr) &&
                  sim_resolve(&sim, pushed.active_addr),
              "all three table addresses point at tables the backend registered");
    }
    okpu_model_free(m);
    sim_free(&sim);
    free(data);
}

/* No model in the data set has 16-bit weights: the first digits layer is pushed again as a 16-bit job (zero u16
 * weights), and the backend must switch the KPU out of 8-bit mode for it and back for the next 8-bit layer. */
static void test_sixteen_bit_mode(void)
{
    okpu_k210_port port;
    sim_kpu sim;
    okpu_error err;
    uint8_t *data = NULL, *weights16;
    uint8_t raw[KPU_ARGS_BYTES];
    okpu_model *m;
    okpu_kpu_backend *b;
    okpu_kpu_layer_job job;
    int rc;

    sim_init(&sim, &port);
    m = digits_on(&port, &err, &data);
    CHECK(m != NULL, "digits model: %s", m ? "" : err.message);
    b = okpu_kpu_k210_create_on(&port, NULL, &err);
    if (m && b) {
        sim.log_n = 0;
        CHECK(okpu_model_run(m, 1, &err) == OKPU_OK && sim.layers_run == 1, "first layer: %s", err.message);
        logged_words(&sim, raw);
        memset(&job, 0, sizeof job);
        job.raw_args = raw;
        okpu_kpu_args_decode(raw, &job.args);
        job.bn = sim.tables[0]; /* registered in build_words' order: batch norm, activation, weights */
        job.act = sim.tables[1];
        weights16 = calloc(okpu_kpu_weights_bytes(&job.args, 0), 1);
        job.weights = weights16;
        sim.log_n = 0;
        rc = b->run_layer(b, &job, &err);
        CHECK(rc == OKPU_OK && sim.layers_run == 2 && sim.silicon_rc == OKPU_OK, "16-bit job: %s", err.message);
        CHECK(sim.log[0].offset == REG_EIGHT_BIT && sim.log[0].value == 0 && sim.eight_bit == 0,
              "16-bit weights: eight_bit_mode written %lu", (unsigned long)sim.log[0].value);
        job.eight_bit = 1;
        job.weights = sim.tables[2];
        sim.log_n = 0;
        rc = b->run_layer(b, &job, &err);
        CHECK(rc == OKPU_OK && sim.log[0].offset == REG_EIGHT_BIT && sim.log[0].value == 1,
              "back to 8-bit weights: eight_bit_mode written %lu", (unsigned long)sim.log[0].value);
        free(weights16);
    }
    if (b)
        b->destroy(b);
    okpu_model_free(m);
    sim_free(&sim);
    free(data);
}

static void expect_run_error(void (*setup)(sim_kpu *), const char *want1, const char *want2, const char *what)
{
    okpu_k210_port port;
    sim_kpu sim;
    okpu_error err;
    uint8_t *data = NULL;
    okpu_model *m;
    int rc;

    sim_init(&sim, &port);
    setup(&sim);
    m = digits_on(&port, &err, &data);
    CHECK(m != NULL, "%s: load: %s", what, m ? "" : err.message);
    if (m) {
        memset(&err, 0, sizeof err);
        rc = okpu_model_run(m, 0, &err);
        CHECK(rc == OKPU_ERR_RUN_MODEL && err.layer >= 0 && strstr(err.message, want1) && strstr(err.message, want2),
              "%s: rc %d layer %d message: %s", what, rc, err.layer, err.message);
        okpu_model_free(m);
    }
    sim_free(&sim);
    free(data);
}

static void set_hang(sim_kpu *s)
{
    s->hang = 1;
}

static void set_misalign(sim_kpu *s)
{
    s->misalign = 1;
}

static void set_unreachable_everything(sim_kpu *s)
{
    s->n_tables = SIM_MAX_TABLES; /* a full table: every new pointer is refused */
}

/* A clock that advances 100 us per look: a hung KPU is reported when the port's timeout has passed, after about
 * timeout / 100 status reads instead of max_polls. */
static uint64_t fake_clock_us;
static unsigned clock_reads;

static uint64_t sim_now_us(void *ctx)
{
    (void)ctx;
    clock_reads++;
    return fake_clock_us += 100u;
}

static void test_clock_bounded_wait(void)
{
    okpu_k210_port port;
    sim_kpu sim;
    okpu_error err;
    uint8_t *data = NULL;
    okpu_model *m;
    int rc;

    sim_init(&sim, &port);
    sim.hang = 1;
    port.now_us = sim_now_us;
    port.timeout_us = 5000;
    port.max_polls = 3; /* ignored once there is a clock */
    m = digits_on(&port, &err, &data);
    CHECK(m != NULL, "clock: load: %s", m ? "" : err.message);
    if (m) {
        clock_reads = 0;
        rc = okpu_model_run(m, 0, &err);
        CHECK(rc == OKPU_ERR_RUN_MODEL && err.layer == 0 && strstr(err.message, "layer 0: the KPU did not signal "
              "calc_done within 5 ms") && strstr(err.message, "SYSCTL_CLOCK_AI"), "clock: %d %s", rc, err.message);
        CHECK(clock_reads == 51, "the wait looked at the clock %u times, expected 1 + 5000/100", clock_reads);
        okpu_model_free(m);
    }
    /* a KPU that answers is not slowed down by the clock */
    sim.hang = 0;
    free(data);
    m = digits_on(&port, &err, &data);
    CHECK(m && okpu_model_run(m, 0, &err) == OKPU_OK, "clock, working KPU: %s", err.message);
    okpu_model_free(m);
    sim_free(&sim);
    free(data);
}

static void test_errors(void)
{
    okpu_k210_port port;
    sim_kpu sim;
    okpu_error err;
    okpu_kpu_backend *b;
    okpu_options o;

    expect_run_error(set_hang, "calc_done after 1000 polls", "SYSCTL_CLOCK_AI", "hung KPU");
    expect_run_error(set_misalign, "not 8-byte aligned", "256-byte aligned buffer", "misaligned tables");
    expect_run_error(set_unreachable_everything, "cannot read", "main SRAM", "unreachable tables");

    sim_init(&sim, &port);
    port.kpu_address = NULL;
    b = okpu_kpu_k210_create_on(&port, NULL, &err);
    CHECK(b == NULL && err.code == OKPU_ERR_PARAM && strstr(err.message, "kpu_address"), "incomplete port: %s",
          err.message);
    okpu_options_default(&o);
    o.backend = OKPU_BACKEND_K210; /* no port, host build */
    b = okpu_kpu_backend_create(&o, &err);
    CHECK(b == NULL && err.code == OKPU_ERR_NOT_IMPLEMENT && strstr(err.message, "OKPU_HAVE_K210_HW"),
          "K210 without a port on a PC: %s", err.message);
    sim_free(&sim);
}

int main(void)
{
    test_register_sequence();
    test_sixteen_bit_mode();
    test_errors();
    test_clock_bounded_wait();
    test_models();
    return ctest_summary();
}
