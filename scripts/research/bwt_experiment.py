"""Does a Burrows-Wheeler transform + move-to-front stage help on karoo's prediction
residuals, as bzip2-like GPU pipelines use? A measurement for archive mode, run by hand:

    .venv/bin/python scripts/research/bwt_experiment.py            # about a minute on 2 cores

Workloads: the generated MeerKAT-like observation at ntime=32 (16 MiB, to stay quick)
and each shared HERA file (skipped when ../shared/data is absent). Each array is viewed
as 32-bit words (complex64 -> float32 pairs, int32 compound {r, i} -> stacked int32
pairs), laid out (ntime, -1) and predicted from the previous time step:

    floats:  residual = zigzag(rotl1(x[t]) - rotl1(x[t-1]))   (rotl1: the uint32 pattern
             rotated left one bit, so the sign lands in bit 0; wrapping 32-bit difference)
    ints:    residual = zigzag(x[t] - x[t-1])
    the first row is predicted as 0.

The residuals (time-major order) are split into 4 byte planes (plane k = byte k of each
residual, 0 = low byte) and each plane is coded on its own by:

    (a) order-0     the plane's order-0 byte entropy (an ideal static per-plane coder)
    (b) bzip2 -9    bz2.compress(plane, 9): BWT + MTF + zero-run RLE + multi-table Huffman
    (c) BWT+MTF     an explicit BWT (suffix array by numpy prefix doubling, blocks of at
                    most BLOCK bytes) then move-to-front, costed at the order-0 entropy of
                    the MTF output per block
    (c') +RLE0      (c) with zero runs written as bzip2's RUNA/RUNB digits first, costed
                    at the order-0 entropy of that symbol stream (closer to what bzip2 does)
    (d) xz -9       lzma.compress(plane, preset=9)

All figures are bits out per bit in (stored / raw; lower is better), summed over the four
planes; a second table gives each plane alone. Entropies are ideal costs (no table or
header overhead); bzip2 and xz are real stream sizes. The BWT and MTF are checked against
naive implementations on a small sample before the run.
"""

import bz2
import lzma
import pathlib
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import datasets  # noqa: E402

BLOCK = 2 << 20  # largest block the explicit BWT sorts at once (bzip2 itself uses 900 kB)
PLANES = 4


def words(data):
    """(uint32 words shaped (ntime, -1), is_float) of a visibility array."""
    arr = np.ascontiguousarray(data)
    if arr.dtype.names:
        arr = np.stack([arr[name] for name in arr.dtype.names], axis=-1)
    elif arr.dtype.kind == "c":
        arr = arr.view(arr.real.dtype)
    if arr.dtype.itemsize != 4:
        raise ValueError(f"{data.dtype}: only 32-bit words are handled")
    is_float = arr.dtype.kind == "f"
    return np.ascontiguousarray(arr).view(np.uint32).reshape(arr.shape[0], -1), is_float


def zigzag(diff):
    """Zigzag map of wrapping 32-bit differences (uint32 in, uint32 out): 0,-1,1,-2 -> 0,1,2,3."""
    signed = diff.view(np.int32)
    return ((signed << 1) ^ (signed >> 31)).view(np.uint32)


def residuals(data):
    """Zigzagged previous-time-step residuals of `data`, uint32, time-major."""
    x, is_float = words(data)
    if is_float:
        x = (x << np.uint32(1)) | (x >> np.uint32(31))
    prev = np.zeros_like(x)
    prev[1:] = x[:-1]
    return zigzag(x - prev)


def byte_planes(res):
    """The PLANES byte planes of the residuals, plane 0 = low byte, each contiguous uint8."""
    as_bytes = np.ascontiguousarray(res.ravel()).astype("<u4").view(np.uint8).reshape(-1, PLANES)
    return [np.ascontiguousarray(as_bytes[:, k]) for k in range(PLANES)]


def entropy_bits(counts):
    """Total bits of an ideal order-0 code for symbols with these counts."""
    counts = np.asarray(counts, dtype=np.float64)
    counts = counts[counts > 0]
    total = counts.sum()
    return float(-(counts * np.log2(counts / total)).sum()) if total else 0.0


def suffix_array(s):
    """Suffix array of uint8 array `s` (a virtual end sentinel sorts before every byte).

    Prefix doubling in numpy: the first ranks come from the first 6 bytes packed in one
    int64 key, then each round sorts by (rank[i], rank[i + k]) and doubles k until every
    rank is distinct.
    """
    n = len(s)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sym = s.astype(np.int64) + 1  # 0 is the sentinel, past the end
    key = np.zeros(n, dtype=np.int64)
    first = 6
    for j in range(first):
        shifted = np.zeros(n, dtype=np.int64)
        shifted[: max(n - j, 0)] = sym[j:]
        key = (key << 9) | shifted
    k = first
    while True:
        sa = np.argsort(key)
        ordered = key[sa]
        new_group = np.empty(n, dtype=bool)
        new_group[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new_group[1:])
        rank = np.empty(n, dtype=np.int64)
        rank[sa] = np.cumsum(new_group)  # ranks 1..n, 0 left for past the end
        if rank.max() == n or k >= n:
            return sa
        ahead = np.zeros(n, dtype=np.int64)
        ahead[: n - k] = rank[k:]
        key = rank * (n + 1) + ahead
        k *= 2


def bwt(s):
    """Burrows-Wheeler transform of `s` with an end sentinel, the sentinel itself left out
    (n bytes out; a decoder would also need the sentinel's row, a few bytes per block)."""
    sa = suffix_array(s)
    if len(s) == 0:
        return s.copy()
    # Rows of s + sentinel: first the sentinel's own suffix (preceded by s[-1]), then the
    # suffixes of s; the one starting at 0 is preceded by the sentinel, which is dropped.
    return np.concatenate([s[-1:], s[sa[sa != 0] - 1]])


def mtf(b):
    """Move-to-front ranks of uint8 array `b` (list starts 0..255), vectorised.

    A repeated symbol's rank is the number of distinct symbols seen since its previous
    occurrence; a first occurrence's rank is the number of distinct symbols seen so far
    plus the number of not-yet-seen symbols below it.
    """
    n = len(b)
    idx = np.arange(n, dtype=np.int64)
    order = np.argsort(b, kind="stable")
    same = b[order][1:] == b[order][:-1]
    prev = np.full(n, -1, dtype=np.int64)
    prev[order[1:]] = np.where(same, order[:-1], -1)
    rank = np.zeros(n, dtype=np.int64)
    last_before = np.empty(n, dtype=np.int64)
    for c in np.unique(b):
        last = np.maximum.accumulate(np.where(b == c, idx, -1))
        last_before[0] = -1
        last_before[1:] = last[:-1]
        rank += last_before > prev  # c seen after b[i]'s previous use (never true for c == b[i])
    seen = []
    for i in np.flatnonzero(prev < 0):  # at most 256 first occurrences, in position order
        c = int(b[i])
        rank[i] += sum(1 for u in range(c) if u not in seen)
        seen.append(c)
    return rank


def rle0_counts(ranks):
    """Symbol counts of MTF output with zero runs written as bzip2's RUNA/RUNB digits.

    A run of L zeros is L in bijective base 2: the bits of L + 1 below its leading one,
    0 -> RUNA, 1 -> RUNB. Nonzero ranks keep their own symbols. Returns counts over
    (RUNA, RUNB, rank 1, ..., rank 255).
    """
    zero = np.concatenate([[False], ranks == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    lengths = (edges[1::2] - edges[::2]).astype(np.int64) + 1  # L + 1
    digits = np.floor(np.log2(lengths)).astype(np.int64)
    ones = np.zeros_like(lengths)
    for bit in range(40):
        ones += (lengths >> bit) & 1
    runb = int((ones - 1).sum())
    runa = int(digits.sum()) - runb
    nonzero = np.bincount(ranks[ranks > 0], minlength=256)[1:]
    return np.concatenate([[runa, runb], nonzero])


def bwt_mtf_bits(plane):
    """(bits of BWT + MTF + order-0, bits of BWT + MTF + RLE0 + order-0) of one plane,
    transformed and costed block by block."""
    plain = rle = 0.0
    for start in range(0, len(plane), BLOCK):
        ranks = mtf(bwt(plane[start : start + BLOCK]))
        plain += entropy_bits(np.bincount(ranks, minlength=256))
        rle += entropy_bits(rle0_counts(ranks))
    return plain, rle


def self_check():
    """Compares bwt and mtf with naive implementations on small samples; raises if they differ."""
    rng = np.random.default_rng(1)
    samples = [rng.integers(0, 4, 3000, dtype=np.uint8), np.zeros(700, dtype=np.uint8),
               np.tile(np.frombuffer(b"abcab", dtype=np.uint8), 200), rng.integers(0, 256, 2000, dtype=np.uint8)]
    for s in samples:
        data = bytes(s)
        naive_sa = sorted(range(len(data)), key=lambda i: data[i:])
        assert suffix_array(s).tolist() == naive_sa, "suffix array"
        naive_bwt = bytes([data[-1]]) + bytes(data[i - 1] for i in naive_sa if i)
        assert bytes(bwt(s)) == naive_bwt, "bwt"
        table, ranks = list(range(256)), []
        for c in data:
            r = table.index(c)
            ranks.append(r)
            table.insert(0, table.pop(r))
        assert mtf(s).tolist() == ranks, "mtf"


def measure(plane):
    """Bits out per plane: dict of the five codings of one byte plane."""
    bits = {"order-0": entropy_bits(np.bincount(plane, minlength=256))}
    raw = plane.tobytes()
    bits["bzip2 -9"] = 8.0 * len(bz2.compress(raw, 9))
    bits["BWT+MTF"], bits["BWT+MTF+RLE0"] = bwt_mtf_bits(plane)
    bits["xz -9"] = 8.0 * len(lzma.compress(raw, preset=9))
    return bits


def workloads():
    """(name, array): the generated observation at ntime=32 and each HERA file, time-major."""
    obs = datasets.meerkat_like(ntime=32)
    out = [(f"MeerKAT-like {obs.nbytes >> 20} MiB", obs)]
    for path in datasets.hera_files():
        time_major, _, _ = datasets.load_hera(path)
        out.append((path.name.split(".HH")[0].split(".sum")[0], time_major))
    if len(out) == 1:
        print("(no HERA files under ../shared/data/hera: skipped)")
    return out


def main():
    start = time.perf_counter()
    self_check()
    columns = ["order-0", "bzip2 -9", "BWT+MTF", "BWT+MTF+RLE0", "xz -9"]
    labels = ["(a) order-0", "(b) bzip2 -9", "(c) BWT+MTF, order-0", "(c') BWT+MTF+RLE0, order-0", "(d) xz -9"]
    totals, per_plane = [], []
    for name, data in workloads():
        res = residuals(data)
        planes = byte_planes(res)
        sums = dict.fromkeys(columns, 0.0)
        for k, plane in enumerate(planes):
            bits = measure(plane)
            per_plane.append((name, k, len(plane), bits))
            for c in columns:
                sums[c] += bits[c]
        totals.append((name, data.shape, data.dtype, res.nbytes, sums))
        print(f"  {name}: done at {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    print(f"\n### Residual coding, bits out per bit in (lower is better); BWT blocks <= {BLOCK >> 20} MiB\n")
    print("| workload | words | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(columns))
    for name, shape, dtype, nbytes, sums in totals:
        cells = " | ".join(f"{sums[c] / (8 * nbytes):.3f}" for c in columns)
        kind = "{" + ", ".join(f"{f}: {dtype[f]}" for f in dtype.names) + "}" if dtype.names else str(dtype)
        print(f"| {name} ({kind}, {nbytes / 2**20:.1f} MiB) | {nbytes // 4} | {cells} |")

    print("\n### Per byte plane (plane 0 = low byte), bits out per bit in\n")
    print("| workload | plane | bytes | " + " | ".join(labels) + " |")
    print("|---|---|---|" + "---|" * len(columns))
    for name, k, n, bits in per_plane:
        cells = " | ".join(f"{bits[c] / (8 * n):.3f}" for c in columns)
        print(f"| {name} | {k} | {n} | {cells} |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
