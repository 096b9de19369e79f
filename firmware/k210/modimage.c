// SPDX-License-Identifier: Apache-2.0
/*
 * `_image`: the per-pixel work of the frozen `image` module (firmware/k210/image.py), in C. Images are planar u8
 * buffers (bytearrays): one w*h plane for grayscale, R, G and B planes for colour, which is also the KPU's input
 * layout (the "AI" buffer), so a camera frame is used by the KPU as it is.
 *
 *   resize(src, c, sw, sh, dst, dw, dh)      bilinear, the same fixed-point arithmetic as Pillow's resample
 *                                            (so a resize gives the PC's `openkpu run` bytes exactly)
 *   rect(buf, c, w, h, x, y, rw, rh, color, thickness)   thickness 0: filled; clipped; Pillow's geometry
 *   text(buf, c, w, h, x, y, str, color, scale) -> width  8x16 font (DejaVu Sans Mono), integer scale
 *   line(buf, c, w, h, x0, y0, x1, y1, color, thickness)  Bresenham, square pen
 *   circle(buf, c, w, h, cx, cy, r, color, thickness, fill)
 *   blit(dst, dc, dw, dh, src, sc, sw, sh, x, y)   paste (gray <-> RGB as Pillow converts), clipped
 *   crop(src, c, w, h, x, y, rw, rh, dst)
 *   gray(src_rgb_planar, dst)     Pillow's L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16
 *   invert(buf), stretch(buf, lo, hi)
 *   planar(src_interleaved, c, dst) / interleaved(src_planar, c, dst)
 *   bmp_rows(data, off, stride, w, h, bpp, top_down, pal, gray, dst)   24/32-bit and paletted 8-bit BMP rows
 */
#include <math.h>
#include <string.h>

#include "py/runtime.h"
#include "py/objstr.h"

#include "font8x16.h"

typedef struct {
    uint8_t *p;
    size_t len;
} buf_t;

static buf_t wbuf(mp_obj_t o) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(o, &bi, MP_BUFFER_RW);
    return (buf_t){ bi.buf, bi.len };
}

static buf_t rbuf(mp_obj_t o) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(o, &bi, MP_BUFFER_READ);
    return (buf_t){ bi.buf, bi.len };
}

static int arg_int(mp_obj_t o) {
    return (int)mp_obj_get_int(o);
}

static void need(buf_t b, size_t n) {
    if (b.len < n) {
        mp_raise_ValueError(MP_ERROR_TEXT("image buffer too small"));
    }
}

// color: a tuple of c values (the Python side converts)
static void get_color(mp_obj_t o, int c, uint8_t *out) {
    size_t n;
    mp_obj_t *items;
    mp_obj_get_array(o, &n, &items);
    for (int k = 0; k < c; k++) {
        out[k] = (uint8_t)mp_obj_get_int(items[(size_t)k < n ? k : 0]);
    }
}

static void fill(uint8_t *buf, int c, int w, int h, int x0, int y0, int x1, int y1, const uint8_t *col) {
    // inclusive corners, clipped
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > w - 1) x1 = w - 1;
    if (y1 > h - 1) y1 = h - 1;
    if (x0 > x1 || y0 > y1) {
        return;
    }
    size_t plane = (size_t)w * h;
    for (int k = 0; k < c; k++) {
        for (int y = y0; y <= y1; y++) {
            memset(buf + k * plane + (size_t)y * w + x0, col[k], (size_t)(x1 - x0 + 1));
        }
    }
}

/* ---- resize: Pillow's ImagingResample with the bilinear filter, 8 bits per channel --------------------------- */

#define PRECISION_BITS (32 - 8 - 2)

static double bilinear(double x) {
    if (x < 0.0) {
        x = -x;
    }
    return x < 1.0 ? 1.0 - x : 0.0;
}

// Coefficients for out pixels 0..out-1 over in pixels [0, in): bounds (xmin, count) and ksize fixed-point weights.
static int coeffs(int in, int out, int **bounds_out, int32_t **kk_out) {
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    int *bounds = m_new(int, 2 * out);
    int32_t *kk = m_new(int32_t, (size_t)out * ksize);
    double *k = m_new(double, ksize);
    for (int xx = 0; xx < out; xx++) {
        double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0) {
            xmin = 0;
        }
        int xmax = (int)(center + support + 0.5);
        if (xmax > in) {
            xmax = in;
        }
        xmax -= xmin;
        int x;
        for (x = 0; x < xmax; x++) {
            double wgt = bilinear((x + xmin - center + 0.5) * ss);
            k[x] = wgt;
            ww += wgt;
        }
        for (x = 0; x < xmax; x++) {
            if (ww != 0.0) {
                k[x] /= ww;
            }
        }
        for (; x < ksize; x++) {
            k[x] = 0;
        }
        for (x = 0; x < ksize; x++) {
            kk[xx * ksize + x] = k[x] < 0 ? (int32_t)(-0.5 + k[x] * (1 << PRECISION_BITS))
                                          : (int32_t)(0.5 + k[x] * (1 << PRECISION_BITS));
        }
        bounds[2 * xx] = xmin;
        bounds[2 * xx + 1] = xmax;
    }
    m_del(double, k, ksize);
    *bounds_out = bounds;
    *kk_out = kk;
    return ksize;
}

static inline uint8_t clip8(int32_t v) {
    v >>= PRECISION_BITS;
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

static void resize_plane(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh, uint8_t *tmp) {
    int *hb = NULL, *vb = NULL;
    int32_t *hk = NULL, *vk = NULL;
    int hks = 0, vks = 0;
    int need_h = dw != sw, need_v = dh != sh;
    int yfirst = 0, ylast = sh;
    if (need_v) {
        vks = coeffs(sh, dh, &vb, &vk);
        yfirst = vb[0];
        ylast = vb[2 * dh - 2] + vb[2 * dh - 1];
    }
    const uint8_t *mid = src + (size_t)yfirst * sw; // rows yfirst..ylast, width dw after the horizontal pass
    int mw = sw;
    if (need_h) {
        hks = coeffs(sw, dw, &hb, &hk);
        uint8_t *out = need_v ? tmp : dst;
        for (int y = yfirst; y < ylast; y++) {
            const uint8_t *row = src + (size_t)y * sw;
            uint8_t *o = out + (size_t)(need_v ? y - yfirst : y) * dw;
            for (int xx = 0; xx < dw; xx++) {
                int xmin = hb[2 * xx], xmax = hb[2 * xx + 1];
                const int32_t *k = hk + xx * hks;
                int32_t ss = 1 << (PRECISION_BITS - 1);
                for (int x = 0; x < xmax; x++) {
                    ss += row[x + xmin] * k[x];
                }
                o[xx] = clip8(ss);
            }
        }
        mid = tmp;
        mw = dw;
    }
    if (need_v) {
        for (int yy = 0; yy < dh; yy++) {
            int ymin = vb[2 * yy] - yfirst, ymax = vb[2 * yy + 1];
            const int32_t *k = vk + yy * vks;
            uint8_t *o = dst + (size_t)yy * dw;
            for (int xx = 0; xx < dw; xx++) {
                int32_t ss = 1 << (PRECISION_BITS - 1);
                for (int y = 0; y < ymax; y++) {
                    ss += mid[(size_t)(y + ymin) * mw + xx] * k[y];
                }
                o[xx] = clip8(ss);
            }
        }
    } else if (!need_h) {
        memcpy(dst, src, (size_t)sw * sh);
    }
    if (hb) {
        m_del(int, hb, 2 * dw);
        m_del(int32_t, hk, (size_t)dw * hks);
    }
    if (vb) {
        m_del(int, vb, 2 * dh);
        m_del(int32_t, vk, (size_t)dh * vks);
    }
}

static mp_obj_t image_resize(size_t n_args, const mp_obj_t *a) {
    buf_t src = rbuf(a[0]);
    int c = arg_int(a[1]), sw = arg_int(a[2]), sh = arg_int(a[3]);
    buf_t dst = wbuf(a[4]);
    int dw = arg_int(a[5]), dh = arg_int(a[6]);
    if (c < 1 || sw < 1 || sh < 1 || dw < 1 || dh < 1) {
        mp_raise_ValueError(MP_ERROR_TEXT("resize: bad size"));
    }
    need(src, (size_t)c * sw * sh);
    need(dst, (size_t)c * dw * dh);
    size_t tmp_len = (size_t)dw * sh;
    uint8_t *tmp = m_new(uint8_t, tmp_len);
    for (int k = 0; k < c; k++) {
        resize_plane(src.p + (size_t)k * sw * sh, sw, sh, dst.p + (size_t)k * dw * dh, dw, dh, tmp);
    }
    m_del(uint8_t, tmp, tmp_len);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_resize_obj, 7, 7, image_resize);

/* ---- drawing ---------------------------------------------------------------------------------------------------- */

static mp_obj_t image_rect(size_t n_args, const mp_obj_t *a) {
    buf_t b = wbuf(a[0]);
    int c = arg_int(a[1]), w = arg_int(a[2]), h = arg_int(a[3]);
    int x = arg_int(a[4]), y = arg_int(a[5]), rw = arg_int(a[6]), rh = arg_int(a[7]);
    uint8_t col[3];
    get_color(a[8], c, col);
    int t = arg_int(a[9]);
    need(b, (size_t)c * w * h);
    if (rw <= 0 || rh <= 0) {
        return mp_const_none;
    }
    int x1 = x + rw - 1, y1 = y + rh - 1;
    if (t <= 0) {
        fill(b.p, c, w, h, x, y, x1, y1, col);
    } else { // Pillow's outline: a frame of thickness t inside the box
        fill(b.p, c, w, h, x, y, x1, y + t - 1, col);
        fill(b.p, c, w, h, x, y1 - t + 1, x1, y1, col);
        fill(b.p, c, w, h, x, y + t, x + t - 1, y1 - t, col);
        fill(b.p, c, w, h, x1 - t + 1, y + t, x1, y1 - t, col);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_rect_obj, 10, 10, image_rect);

static mp_obj_t image_text(size_t n_args, const mp_obj_t *a) {
    buf_t b = wbuf(a[0]);
    int c = arg_int(a[1]), w = arg_int(a[2]), h = arg_int(a[3]);
    int x = arg_int(a[4]), y = arg_int(a[5]);
    size_t len;
    const char *s = mp_obj_str_get_data(a[6], &len);
    uint8_t col[3];
    get_color(a[7], c, col);
    int scale = arg_int(a[8]);
    if (scale < 1) {
        scale = 1;
    }
    need(b, (size_t)c * w * h);
    int cx = x;
    for (size_t i = 0; i < len; i++) {
        unsigned ch = (uint8_t)s[i];
        if (ch == '\n') {
            cx = x;
            y += FONT_H * scale;
            continue;
        }
        if (ch < FONT_FIRST || ch > FONT_LAST) {
            ch = '?';
        }
        const uint8_t *g = font8x16[ch - FONT_FIRST];
        for (int gy = 0; gy < FONT_H; gy++) {
            for (int gx = 0; gx < FONT_W; gx++) {
                if (g[gy] & (0x80 >> gx)) {
                    fill(b.p, c, w, h, cx + gx * scale, y + gy * scale, cx + gx * scale + scale - 1,
                        y + gy * scale + scale - 1, col);
                }
            }
        }
        cx += FONT_W * scale;
    }
    return mp_obj_new_int(cx - x);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_text_obj, 9, 9, image_text);

static mp_obj_t image_line(size_t n_args, const mp_obj_t *a) {
    buf_t b = wbuf(a[0]);
    int c = arg_int(a[1]), w = arg_int(a[2]), h = arg_int(a[3]);
    int x0 = arg_int(a[4]), y0 = arg_int(a[5]), x1 = arg_int(a[6]), y1 = arg_int(a[7]);
    uint8_t col[3];
    get_color(a[8], c, col);
    int t = arg_int(a[9]);
    need(b, (size_t)c * w * h);
    if (t < 1) {
        t = 1;
    }
    int lo = (t - 1) / 2, hi = t / 2;
    int dx = x1 > x0 ? x1 - x0 : x0 - x1, sx = x0 < x1 ? 1 : -1;
    int dy = y1 > y0 ? y0 - y1 : y1 - y0, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
        fill(b.p, c, w, h, x0 - lo, y0 - lo, x0 + hi, y0 + hi, col);
        if (x0 == x1 && y0 == y1) {
            break;
        }
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_line_obj, 10, 10, image_line);

static mp_obj_t image_circle(size_t n_args, const mp_obj_t *a) {
    buf_t b = wbuf(a[0]);
    int c = arg_int(a[1]), w = arg_int(a[2]), h = arg_int(a[3]);
    int cx = arg_int(a[4]), cy = arg_int(a[5]), r = arg_int(a[6]);
    uint8_t col[3];
    get_color(a[7], c, col);
    int t = arg_int(a[8]), filled = mp_obj_is_true(a[9]);
    need(b, (size_t)c * w * h);
    if (r < 0) {
        return mp_const_none;
    }
    int r_in = filled ? -1 : r - (t < 1 ? 1 : t);
    for (int dy = -r; dy <= r; dy++) { // each row: the span inside r minus the span inside r_in
        int ox = (int)sqrt((double)r * r - (double)dy * dy + 0.25 * r);
        if (r_in < 0 || dy * dy > r_in * r_in) {
            fill(b.p, c, w, h, cx - ox, cy + dy, cx + ox, cy + dy, col);
        } else {
            int ix = (int)sqrt((double)r_in * r_in - (double)dy * dy + 0.25 * r_in);
            fill(b.p, c, w, h, cx - ox, cy + dy, cx - ix - 1, cy + dy, col);
            fill(b.p, c, w, h, cx + ix + 1, cy + dy, cx + ox, cy + dy, col);
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_circle_obj, 10, 10, image_circle);

static inline uint8_t luma(unsigned r, unsigned g, unsigned b) {
    return (uint8_t)((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

static mp_obj_t image_blit(size_t n_args, const mp_obj_t *a) {
    buf_t d = wbuf(a[0]);
    int dc = arg_int(a[1]), dw = arg_int(a[2]), dh = arg_int(a[3]);
    buf_t s = rbuf(a[4]);
    int sc = arg_int(a[5]), sw = arg_int(a[6]), sh = arg_int(a[7]);
    int x = arg_int(a[8]), y = arg_int(a[9]);
    need(d, (size_t)dc * dw * dh);
    need(s, (size_t)sc * sw * sh);
    size_t dp = (size_t)dw * dh, sp = (size_t)sw * sh;
    for (int yy = 0; yy < sh; yy++) {
        int ty = y + yy;
        if (ty < 0 || ty >= dh) {
            continue;
        }
        int x0 = x < 0 ? -x : 0, x1 = x + sw > dw ? dw - x : sw;
        if (x0 >= x1) {
            continue;
        }
        size_t so = (size_t)yy * sw, doff = (size_t)ty * dw + x;
        if (sc == dc) {
            for (int k = 0; k < dc; k++) {
                memcpy(d.p + k * dp + doff + x0, s.p + k * sp + so + x0, (size_t)(x1 - x0));
            }
        } else if (sc == 1) { // gray -> RGB: replicated
            for (int k = 0; k < dc; k++) {
                memcpy(d.p + k * dp + doff + x0, s.p + so + x0, (size_t)(x1 - x0));
            }
        } else { // RGB -> gray
            for (int xx = x0; xx < x1; xx++) {
                d.p[doff + xx] = luma(s.p[so + xx], s.p[sp + so + xx], s.p[2 * sp + so + xx]);
            }
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_blit_obj, 10, 10, image_blit);

static mp_obj_t image_crop(size_t n_args, const mp_obj_t *a) {
    buf_t s = rbuf(a[0]);
    int c = arg_int(a[1]), w = arg_int(a[2]), h = arg_int(a[3]);
    int x = arg_int(a[4]), y = arg_int(a[5]), rw = arg_int(a[6]), rh = arg_int(a[7]);
    buf_t d = wbuf(a[8]);
    if (x < 0 || y < 0 || rw < 1 || rh < 1 || x + rw > w || y + rh > h) {
        mp_raise_ValueError(MP_ERROR_TEXT("crop outside the image"));
    }
    need(s, (size_t)c * w * h);
    need(d, (size_t)c * rw * rh);
    for (int k = 0; k < c; k++) {
        for (int yy = 0; yy < rh; yy++) {
            memcpy(d.p + (size_t)k * rw * rh + (size_t)yy * rw, s.p + (size_t)k * w * h + (size_t)(y + yy) * w + x,
                (size_t)rw);
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_crop_obj, 9, 9, image_crop);

static mp_obj_t image_gray(mp_obj_t src_in, mp_obj_t dst_in) {
    buf_t d = wbuf(dst_in);
    buf_t s = rbuf(src_in);
    size_t n = d.len;
    need(s, 3 * n);
    for (size_t i = 0; i < n; i++) {
        d.p[i] = luma(s.p[i], s.p[n + i], s.p[2 * n + i]);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(image_gray_obj, image_gray);

static mp_obj_t image_invert(mp_obj_t buf_in) {
    buf_t b = wbuf(buf_in);
    for (size_t i = 0; i < b.len; i++) {
        b.p[i] = (uint8_t)(255u - b.p[i]);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(image_invert_obj, image_invert);

static mp_obj_t image_stretch(mp_obj_t buf_in, mp_obj_t lo_in, mp_obj_t hi_in) {
    buf_t b = wbuf(buf_in);
    int lo = arg_int(lo_in), hi = arg_int(hi_in), span = hi - lo;
    for (size_t i = 0; i < b.len; i++) {
        int v = b.p[i];
        b.p[i] = v <= lo ? 0 : v >= hi ? 255 : (uint8_t)((v - lo) * 255 / span);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(image_stretch_obj, image_stretch);

static mp_obj_t image_planar(mp_obj_t src_in, mp_obj_t c_in, mp_obj_t dst_in) {
    buf_t s = rbuf(src_in), d = wbuf(dst_in);
    int c = arg_int(c_in);
    size_t n = d.len / (size_t)c;
    need(s, (size_t)c * n);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < c; k++) {
            d.p[k * n + i] = s.p[i * c + k];
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(image_planar_obj, image_planar);

static mp_obj_t image_interleaved(mp_obj_t src_in, mp_obj_t c_in, mp_obj_t dst_in) {
    buf_t s = rbuf(src_in), d = wbuf(dst_in);
    int c = arg_int(c_in);
    size_t n = d.len / (size_t)c;
    need(s, (size_t)c * n);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < c; k++) {
            d.p[i * c + k] = s.p[k * n + i];
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(image_interleaved_obj, image_interleaved);

// bmp_rows(data, off, stride, w, h, bpp, top_down, pal, gray, dst): pal = palette bytes (BGRA) for 8-bit
static mp_obj_t image_bmp_rows(size_t n_args, const mp_obj_t *a) {
    buf_t data = rbuf(a[0]);
    size_t off = (size_t)mp_obj_get_int(a[1]), stride = (size_t)mp_obj_get_int(a[2]);
    int w = arg_int(a[3]), h = arg_int(a[4]), bpp = arg_int(a[5]), top_down = mp_obj_is_true(a[6]);
    buf_t pal = { NULL, 0 };
    if (a[7] != mp_const_none) {
        pal = rbuf(a[7]);
    }
    int gray = mp_obj_is_true(a[8]);
    buf_t d = wbuf(a[9]);
    size_t n = (size_t)w * h, step = (size_t)bpp / 8;
    need(d, n * (gray ? 1 : 3));
    if (off + stride * (size_t)(h - 1) + (size_t)w * step > data.len) {
        mp_raise_ValueError(MP_ERROR_TEXT("image: truncated BMP"));
    }
    for (int y = 0; y < h; y++) {
        const uint8_t *row = data.p + off + (size_t)(top_down ? y : h - 1 - y) * stride;
        size_t base = (size_t)y * w;
        for (int x = 0; x < w; x++) {
            const uint8_t *px = row + (size_t)x * step;
            if (bpp == 8) {
                size_t k = 4u * px[0];
                if (k + 2 >= pal.len) {
                    mp_raise_ValueError(MP_ERROR_TEXT("image: BMP palette index out of range"));
                }
                px = pal.p + k;
            }
            if (gray) {
                d.p[base + x] = px[0];
            } else {
                d.p[base + x] = px[2];
                d.p[n + base + x] = px[1];
                d.p[2 * n + base + x] = px[0];
            }
        }
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(image_bmp_rows_obj, 10, 10, image_bmp_rows);

static const mp_rom_map_elem_t image_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__image) },
    { MP_ROM_QSTR(MP_QSTR_resize), MP_ROM_PTR(&image_resize_obj) },
    { MP_ROM_QSTR(MP_QSTR_rect), MP_ROM_PTR(&image_rect_obj) },
    { MP_ROM_QSTR(MP_QSTR_text), MP_ROM_PTR(&image_text_obj) },
    { MP_ROM_QSTR(MP_QSTR_line), MP_ROM_PTR(&image_line_obj) },
    { MP_ROM_QSTR(MP_QSTR_circle), MP_ROM_PTR(&image_circle_obj) },
    { MP_ROM_QSTR(MP_QSTR_blit), MP_ROM_PTR(&image_blit_obj) },
    { MP_ROM_QSTR(MP_QSTR_crop), MP_ROM_PTR(&image_crop_obj) },
    { MP_ROM_QSTR(MP_QSTR_gray), MP_ROM_PTR(&image_gray_obj) },
    { MP_ROM_QSTR(MP_QSTR_invert), MP_ROM_PTR(&image_invert_obj) },
    { MP_ROM_QSTR(MP_QSTR_stretch), MP_ROM_PTR(&image_stretch_obj) },
    { MP_ROM_QSTR(MP_QSTR_planar), MP_ROM_PTR(&image_planar_obj) },
    { MP_ROM_QSTR(MP_QSTR_interleaved), MP_ROM_PTR(&image_interleaved_obj) },
    { MP_ROM_QSTR(MP_QSTR_bmp_rows), MP_ROM_PTR(&image_bmp_rows_obj) },
    { MP_ROM_QSTR(MP_QSTR_FONT_W), MP_ROM_INT(FONT_W) },
    { MP_ROM_QSTR(MP_QSTR_FONT_H), MP_ROM_INT(FONT_H) },
};
static MP_DEFINE_CONST_DICT(image_globals, image_globals_table);

const mp_obj_module_t image_native_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&image_globals,
};
MP_REGISTER_MODULE(MP_QSTR__image, image_native_module);
