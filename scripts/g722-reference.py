#!/usr/bin/env python3
"""Writes the G.722 reference fixtures of test/telephony/media/codec/g722.test.ts.

    python3 scripts/g722-reference.py [output directory, default test/fixtures/g722]

Needs only Python 3 and libspandsp.so.2 (Debian's libspandsp2: the G.722 of baresip's g722 module
and of Asterisk), called through ctypes; no headers: its states are opaque pointers, except that the
first field of both, itu_test_mode (spandsp/private/g722.h), is set to by-pass its QMFs.

What the fixtures hold is the Recommendation's arithmetic at 64 kbit/s, built and checked like this:
  - The sub-band ADPCM coders are spandsp's, run with the QMFs by-passed. Before anything else the
    script checks them against G.722 Appendix II's digital test sequence T1C2.XMT -> T2R2.COD,
    T3L2.RC1, T3H2.RC0 (the input rebuilt from its pattern, the outputs compared by the CRC-32s the
    ITU publishes for its binary files).
  - The transmit and receive QMFs are this script's, after the Recommendation and the ITU-T
    reference implementation (G.191 STL, funcg722.c), and they differ from spandsp's in two places:
    the transmit QMF holds XL and XH to 15 bits (its blocks LOWT and HIGHT; spandsp, like ffmpeg,
    leaves the limit out, which changes the octets of any input that drives a sub-band past 15 bits,
    i.e. near full scale), and the receive QMF saturates its output at 16 bits (this spandsp, of
    2011, wraps around instead; later spandsp saturates too).
  - The script checks both QMFs against spandsp's own (full mode): the encoding must be spandsp's
    octet for octet up to the first pair that needed the limit (the signal puts its clipped parts
    last, so everything else is covered), and the decoding must be spandsp's at every sample except
    those where spandsp wrapped, where it must be the wrapped value of the unsaturated sum.

Files written, raw little-endian without headers:
  input.s16        the test signal: 16-bit PCM at 16 kHz, a whole number of 20 ms frames
  input.g722       its encoding, one octet per pair of samples
  input.out.s16    the decoding of input.g722
  random.g722      octets from a linear congruential generator: every code word a decoder may meet
                   (an encoder never emits the lower-band codes 0-3)
  random.out.s16   the decoding of random.g722

The test signal, in order: silence; -10 dBFS tones at 300, 1000, 3400, 6000 and 7000 Hz; a linear
sweep from 50 Hz to 7950 Hz at -6 dBFS; white noise; low-level noise (within ±4); a speech-like buzz
(150 Hz harmonics under a syllable envelope); silence; then the clipped parts: a 1 kHz sine at three
times full scale, clipped, and a square wave between the 16-bit extremes at 4 kHz. Rounded from
floating point here, once: the test reads the fixture and computes none of it again.
"""

import ctypes
import math
import os
import struct
import sys
import zlib

RATE = 16000
FRAME = 320  # 20 ms at 16 kHz
FULL_SCALE = 32767

# The QMF coefficients h(0) ... h(23), scaled by 2^13.
H_HALF = [3, -11, -11, 53, 12, -156, 32, 362, -210, -805, 951, 3876]
H = H_HALF + H_HALF[::-1]

lib = ctypes.CDLL("libspandsp.so.2")
for name in ("g722_encode_init", "g722_decode_init"):
    getattr(lib, name).restype = ctypes.c_void_p
    getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
for name in ("g722_encode", "g722_decode"):
    getattr(lib, name).restype = ctypes.c_int
    getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
for name in ("g722_encode_free", "g722_decode_free"):
    getattr(lib, name).argtypes = [ctypes.c_void_p]


def new_state(init, itu_test_mode):
    state = init(None, 64000, 0)
    if itu_test_mode:
        ctypes.c_int.from_address(state).value = 1
    return state


def spandsp_encode(samples, itu_test_mode=False):
    """Octets for `samples`: a pair each, or one each with the QMF by-passed (the sample, halved,
    going to both sub-bands)."""
    state = new_state(lib.g722_encode_init, itu_test_mode)
    pcm = (ctypes.c_int16 * len(samples))(*samples)
    out = (ctypes.c_uint8 * len(samples))()
    written = lib.g722_encode(state, out, pcm, len(samples))
    lib.g722_encode_free(state)
    return bytes(out[:written])


def spandsp_decode(octets, itu_test_mode=False):
    """Samples for `octets`: two each, with the QMF by-passed rL·2 and rH·2."""
    state = new_state(lib.g722_decode_init, itu_test_mode)
    data = (ctypes.c_uint8 * len(octets)).from_buffer_copy(octets)
    out = (ctypes.c_int16 * (2 * len(octets)))()
    written = lib.g722_decode(state, out, data, len(octets))
    lib.g722_decode_free(state)
    return list(out[:written])


def check_appendix_ii():
    """spandsp's sub-band coders against Appendix II's T1C2 sequence (mode 1)."""
    data = [0x8000, 0x7FFE] * 319 + [0x8000, 0x0000, 0xB1E0, 0xC000] + [0x8000, 0x7FFE, 0x8000] * 42
    sync = [0x0001] * 16

    def crc(words):
        return zlib.crc32(struct.pack("<%dH" % len(words), *(w & 0xFFFF for w in words)))

    assert crc(sync + data + sync) == 0x2D604685, "T1C2.XMT rebuilt wrongly"
    octets = spandsp_encode([struct.unpack("<h", struct.pack("<H", w))[0] for w in data], True)
    assert crc(sync + [o << 8 for o in octets] + sync) == 0x344EA5D0, "T2R2.COD"
    decoded = spandsp_decode(octets, True)
    assert crc(sync + decoded[0::2] + sync) == 0xAF00F31F, "T3L2.RC1"
    assert crc(sync + decoded[1::2] + sync) == 0x5330AE2E, "T3H2.RC0"


def limit15(x):
    return max(-16384, min(16383, x))


def saturate16(x):
    return max(-32768, min(32767, x))


def wrap16(x):
    return (x + 32768) % 65536 - 32768


def transmit_qmf(samples):
    """XL and XH for each pair, as the Recommendation: xA = Σ h(2i)·xin(j − 2i), xB = Σ h(2i + 1)·
    xin(j − 2i − 1), XL = (xA + xB)·2^-14 and XH = (xA − xB)·2^-14 held to 15 bits. Also returns the
    index of the first pair the limit held, or None."""
    history = [0] * 24  # xin(j), xin(j − 1) … xin(j − 23)
    low, high, first_limited = [], [], None
    for j in range(0, len(samples), 2):
        history = [samples[j + 1], samples[j]] + history[:22]
        xa = sum(H[k] * history[k] for k in range(0, 24, 2))
        xb = sum(H[k] * history[k] for k in range(1, 24, 2))
        xl, xh = (xa + xb) >> 14, (xa - xb) >> 14
        if first_limited is None and (xl != limit15(xl) or xh != limit15(xh)):
            first_limited = j // 2
        low.append(limit15(xl))
        high.append(limit15(xh))
    return low, high, first_limited


def receive_qmf(low, high):
    """xout(j) = Σ h(2i)·xd(j − i) and xout(j + 1) = Σ h(2i + 1)·xs(j − i), xd = rL − rH and
    xs = rL + rH, each ·2^-11 and saturated; also returns the unsaturated sums."""
    differences, sums = [0] * 12, [0] * 12  # newest first
    out, unsaturated = [], []
    for rl, rh in zip(low, high):
        differences = [rl - rh] + differences[:11]
        sums = [rl + rh] + sums[:11]
        first = sum(H[2 * i] * differences[i] for i in range(12)) >> 11
        second = sum(H[2 * i + 1] * sums[i] for i in range(12)) >> 11
        unsaturated += [first, second]
        out += [saturate16(first), saturate16(second)]
    return out, unsaturated


def encode(samples):
    """The Recommendation's encoder: this QMF, then spandsp's sub-band coders, the lower band's run
    on XL and the higher band's on XH (each by-passed coder codes one value into both bands; the
    bands are independent, so the octet takes IL from one and IH from the other)."""
    low, high, first_limited = transmit_qmf(samples)
    il = spandsp_encode([x << 1 for x in low], True)
    ih = spandsp_encode([x << 1 for x in high], True)
    octets = bytes((h & 0xC0) | (l & 0x3F) for l, h in zip(il, ih))

    reference = spandsp_encode(samples)
    agree = len(octets) if first_limited is None else first_limited
    assert octets[:agree] == reference[:agree], "the encoder departs from spandsp before any limit"
    return octets, first_limited


def decode(octets):
    """The Recommendation's decoder: spandsp's sub-band decoders, then this QMF."""
    bands = spandsp_decode(octets, True)
    out, unsaturated = receive_qmf([x >> 1 for x in bands[0::2]], [x >> 1 for x in bands[1::2]])

    reference = spandsp_decode(octets)
    wrapped = 0
    for ours, theirs, raw in zip(out, reference, unsaturated):
        if ours != theirs:
            assert raw != ours and theirs == wrap16(raw), "the decoder departs from spandsp"
            wrapped += 1
    return out, wrapped


class Lcg:
    """Numerical Recipes' 32-bit LCG: the same numbers on every machine and Python version."""

    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.state

    def uniform(self):
        return self.next() / 2**32


def clip(x):
    return max(-32768, min(FULL_SCALE, int(round(x))))


def frames(seconds):
    return int(round(seconds * RATE / FRAME)) * FRAME


def tone(frequency, dbfs, seconds):
    amplitude = FULL_SCALE * 10 ** (dbfs / 20)
    return [clip(amplitude * math.sin(2 * math.pi * frequency * n / RATE)) for n in range(frames(seconds))]


def sweep(start, stop, dbfs, seconds):
    count = frames(seconds)
    amplitude = FULL_SCALE * 10 ** (dbfs / 20)
    duration = count / RATE
    # A linear chirp's phase: 2π (f0·t + (f1 − f0)·t² / 2T).
    return [
        clip(amplitude * math.sin(2 * math.pi * (start * t + (stop - start) * t * t / (2 * duration))))
        for t in (n / RATE for n in range(count))
    ]


def noise(amplitude, seconds, seed):
    lcg = Lcg(seed)
    return [clip(amplitude * (2 * lcg.uniform() - 1)) for _ in range(frames(seconds))]


def buzz(seconds):
    count = frames(seconds)
    out = []
    for n in range(count):
        t = n / RATE
        envelope = math.sin(math.pi * n / count) ** 2
        harmonics = sum(math.sin(2 * math.pi * 150 * k * t) / k for k in range(1, 30))
        out.append(clip(6000 * envelope * harmonics))
    return out


def test_signal():
    signal = [0] * frames(0.1)
    for frequency in (300, 1000, 3400, 6000, 7000):
        signal += tone(frequency, -10, 0.1)
    signal += sweep(50, 7950, -6, 0.3)
    signal += noise(8000, 0.1, seed=1)
    signal += noise(4, 0.06, seed=2)
    signal += buzz(0.2)
    signal += [0] * frames(0.04)
    # Last, so that everything before them is checked against spandsp's own QMF too.
    signal += [clip(3 * FULL_SCALE * math.sin(2 * math.pi * 1000 * n / RATE)) for n in range(frames(0.1))]
    signal += [FULL_SCALE if (n // 2) % 2 == 0 else -32768 for n in range(frames(0.06))]
    return signal


def write_s16(path, samples):
    with open(path, "wb") as f:
        f.write(struct.pack("<%dh" % len(samples), *samples))


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.path.join("test", "fixtures", "g722")
    os.makedirs(directory, exist_ok=True)
    check_appendix_ii()

    signal = test_signal()
    assert len(signal) % FRAME == 0
    octets, first_limited = encode(signal)
    decoded, wrapped = decode(octets)
    write_s16(os.path.join(directory, "input.s16"), signal)
    with open(os.path.join(directory, "input.g722"), "wb") as f:
        f.write(octets)
    write_s16(os.path.join(directory, "input.out.s16"), decoded)

    lcg = Lcg(3)
    random_octets = bytes(lcg.next() >> 24 for _ in range(10 * FRAME // 2))
    random_decoded, random_wrapped = decode(random_octets)
    with open(os.path.join(directory, "random.g722"), "wb") as f:
        f.write(random_octets)
    write_s16(os.path.join(directory, "random.out.s16"), random_decoded)

    print(f"{directory}: {len(signal)} samples ({len(signal) / RATE:.2f} s) in {len(octets)} octets;")
    print(f"  Appendix II T1C2 -> T2R2, T3L2.RC1, T3H2.RC0: spandsp's sub-band coders match")
    print(f"  encoding = spandsp's for octets 0-{first_limited - 1}, then the 15-bit limit first held XL/XH")
    print(f"  decoding = spandsp's except {wrapped} + {random_wrapped} (random) samples spandsp wrapped")


main()
