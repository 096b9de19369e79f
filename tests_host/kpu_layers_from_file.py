"""The KPU layers of a real kmodel file, read in Python straight from the bytes
(docs/kpu-reference.md sections 2, 3, 6), as high-level objects that :func:`kpu_reference.kpu_layer` runs.

Independent of the C readers on purpose: the tests run a real file's layers through the NumPy reference and compare
them with the emulator, and compare two builds of the same network layer by layer.
"""
import struct
import types

import numpy as np

from openkpu.kmodel_writer import parse_v3, unpack_layer_args

V4_KPU_CONV2D = 0x2002
ACT_TABLE_BYTES = 144


def _signed(v, bits):
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def decode_bn(raw, out_channels):
    """(mul, add, shift) lists from the u64-per-channel batch-norm table."""
    words = struct.unpack_from("<%dQ" % out_channels, raw, 0)
    mul = [_signed(w & 0xFFFFFF, 24) for w in words]
    add = [_signed((w >> 24) & 0xFFFFFFFF, 32) for w in words]
    shift = [(w >> 56) & 0xF for w in words]
    return mul, add, shift


def decode_act(raw):
    """The 16-segment activation table: 16 x u64 {shift, y_mul (s16), x_start (s36)} then 16 u8 biases."""
    words = struct.unpack_from("<16Q", raw, 0)
    return types.SimpleNamespace(
        x_start=[_signed((w >> 24) & ((1 << 36) - 1), 36) for w in words],
        y_mul=[_signed((w >> 8) & 0xFFFF, 16) for w in words],
        shift=[w & 0xFF for w in words],
        bias=list(raw[128:144]))


def _layer(args, weights_raw, bn_raw, act_raw):
    oc, ic = args["o_ch_num"] + 1, args["i_ch_num"] + 1
    kernel = 3 if args["kernel_type"] == 1 else 1
    depthwise = bool(args["depth_wise_layer"])
    shape = (oc, kernel, kernel) if depthwise else (oc, ic, kernel, kernel)
    weights = np.frombuffer(weights_raw, np.uint8, int(np.prod(shape))).reshape(shape)
    mul, add, shift = decode_bn(bn_raw, oc)
    return types.SimpleNamespace(
        kernel=kernel, weights=weights, depthwise=depthwise, pad_value=args["pad_value"],
        arg_x=args["arg_x"], shr_x=args["shr_x"], arg_w=args["arg_w"], shr_w=args["shr_w"], arg_add=args["arg_add"],
        bn_mul=mul, bn_add=add, bn_shift=shift, act=decode_act(act_raw), pool_type=args["pool_type"],
        in_shape=(ic, args["i_col_high"] + 1, args["i_row_wid"] + 1), out_channels=oc)


def v3_kpu_layers(data):
    """K210_CONV layers of a v3 file: the body's header holds absolute file offsets of each table."""
    layers = []
    for parsed in parse_v3(data).layers:
        if not parsed.conv:
            continue
        c, args = parsed.conv, parsed.conv["args"]
        oc, ic, k = args["o_ch_num"] + 1, args["i_ch_num"] + 1, 3 if args["kernel_type"] == 1 else 1
        n_weights = (oc if args["depth_wise_layer"] else oc * ic) * k * k
        layers.append(_layer(args, data[c["weights_offset"]:c["weights_offset"] + n_weights],
                             data[c["bn_offset"]:c["bn_offset"] + 8 * oc],
                             data[c["act_offset"]:c["act_offset"] + ACT_TABLE_BYTES]))
    return layers


def v4_layout(data):
    """(header words, node table offset, [(index, opcode, body offset, body size)]) of a v4 file. Header: 10 u32
    (constants bytes at [4], nodes [6], inputs [7], outputs [8]); then per input a range + shape (32 B), per output a
    range (16 B), the constants, and the node table; the constants end where the node table starts."""
    hdr = struct.unpack_from("<10I", data, 0)
    table = 40 + 32 * hdr[7] + 16 * hdr[8] + hdr[4]
    nodes, pos = [], table + 8 * hdr[6]
    for i in range(hdr[6]):
        opcode, size = struct.unpack_from("<2I", data, table + 8 * i)
        nodes.append((i, opcode, pos, size))
        pos += size
    return hdr, table, nodes


def v4_constants(data):
    hdr, table, _ = v4_layout(data)
    return data[table - hdr[4]:table]


def v4_nodes(data):
    """[(opcode, body bytes)] of a v4 file."""
    return [(opcode, data[off:off + size]) for _, opcode, off, size in v4_layout(data)[2]]


def v4_kpu_layers(data):
    """kpu_conv2d nodes of a v4 file: main_mem_output range, batches, reserved, the 96-byte layer argument, then the
    BN table, the activation table and the weights, each after the padding count stored in the argument's address
    field."""
    layers = []
    for opcode, body in v4_nodes(data):
        if opcode != V4_KPU_CONV2D:
            continue
        pos = 24
        args = unpack_layer_args(body[pos:pos + 96])
        pos += 96
        oc, ic, k = args["o_ch_num"] + 1, args["i_ch_num"] + 1, 3 if args["kernel_type"] == 1 else 1
        pos += args["bwsx_base_addr"]
        bn = body[pos:pos + 8 * oc]
        pos += 8 * oc + args["active_addr"]
        act = body[pos:pos + ACT_TABLE_BYTES]
        pos += ACT_TABLE_BYTES + args["para_start_addr"]
        n_weights = (oc if args["depth_wise_layer"] else oc * ic) * k * k
        layers.append(_layer(args, body[pos:pos + n_weights], bn, act))
    return layers
