#!/usr/bin/env python3
"""Speed of karoo against its peers, one thread, in one run.

Two tables:

1. The codecs alone, one thread, on one chunk of each workload (the generated MeerKAT-like
   observation, a chunk of 16 time steps; each UVH5 file of ../shared/data, a chunk of up
   to 4 MiB of whole time steps; generated int16 x scale spectra): stored/raw, compress
   and decompress MB/s of karoo fast and archive (the installed Python package, its C API),
   pcodec level 8 (the chunk's series laid along time), Blosc2 bitshuffle+LZ4 5 and
   shuffle+Zstd 5 (python-blosc2, one thread) and a memory copy. Codecs are measured in
   interleaved rounds (every codec once per round, best of the rounds), so a burst of load
   on the shared machine hits them all alike.
2. Through h5py: the generated observation written and read with no filter, karoo fast
   and Bitshuffle+LZ4 at 1 and 16 time steps per chunk (files in /dev/shm, chunk cache
   off, all cores), each filter timed in a process of its own, with glibc's default
   allocator and with its thresholds pinned (see h5_timing.py), with each filter's
   throughput as a fraction of no filter's and of Bitshuffle+LZ4's.

Run after `pip install .` (karoo's Python package carries the plugin):

    python scripts/bench_speed.py [--quick] [--rounds 5] [--doc]

`--doc` writes the tables into docs/benchmarks.md, labelled with the date, commit, machine
and command: section "speed" on a CPU with AVX-512, "speed-avx2" on one with AVX2 only,
"speed-portable" on any other (karoo's kernels differ by vector width, so each kind of
CPU keeps its own tables).
"""

import argparse
import os
import pathlib
import shlex
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_doc  # noqa: E402
import datasets  # noqa: E402
import h5_timing  # noqa: E402
from bench_compression import series_along_time  # noqa: E402

CHUNK_BYTES = 4 << 20


def as_words(chunk):
    """The chunk as karoo's Python API codes it: as it is. Complex numbers and {r, i}
    compounds are elements of two words, as the HDF5 filter's set_local lays them out
    (stacking a compound's fields on a trailing axis would code them as one series of
    integers instead)."""
    return chunk


def workloads(quick):
    """(name, chunk with time on axis 0) of every workload."""
    out = []
    obs = datasets.meerkat_like(ntime=16, nchan=1024 if quick else 4096)
    out.append((f"generated observation, 16 steps {obs.shape}", obs))
    for path in datasets.uvh5_files():
        time_major, _, _ = datasets.load_hera(path)
        step_bytes = time_major[0].nbytes
        steps = max(1, min(time_major.shape[0], CHUNK_BYTES // max(step_bytes, 1)))
        chunk = np.ascontiguousarray(time_major[:steps])
        out.append((f"{path.name.removesuffix('.uvh5')}, {steps} steps", chunk))
    spectra = datasets.scaled_int16_spectra(ntime=16, nbl=28, nchan=512 if quick else 1024)
    out.append((f"generated int16 x scale spectra {spectra.shape}", spectra))
    return out


def karoo_codec(mode, level=0):
    """karoo in `mode` at effort `level`, one thread, as codecs() gives a codec."""
    import karoo

    def pack(words):
        return karoo.compress(words, mode=mode, level=level, threads=1)

    def unpack(packed):
        return karoo.decompress(packed, threads=1)

    return as_words, pack, unpack


def codecs():
    """name -> (the input it codes, prepared from a chunk outside the timing;
    compress(input) -> packed; decompress(packed) -> array or bytes)."""
    import blosc2
    from pcodec import ChunkConfig, standalone

    blosc2.set_nthreads(1)

    def pcodec_pack(series):
        return standalone.simple_compress(series, ChunkConfig(compression_level=8))

    def blosc(filter_, cname):
        def pack(series):
            return blosc2.compress2(series, codec=cname, clevel=5, typesize=series.itemsize,
                                    filters=[filter_], filters_meta=[0], nthreads=1)

        def unpack(packed):
            return blosc2.decompress2(packed, nthreads=1)

        return series_along_time, pack, unpack

    return {
        "karoo fast": karoo_codec("fast"),
        "karoo archive": karoo_codec("archive"),
        "pcodec 8": (series_along_time, pcodec_pack, standalone.simple_decompress),
        "blosc2 bitshuffle+lz4 5": blosc(blosc2.Filter.BITSHUFFLE, blosc2.Codec.LZ4),
        "blosc2 shuffle+zstd 5": blosc(blosc2.Filter.SHUFFLE, blosc2.Codec.ZSTD),
    }


def packed_len(packed):
    """Bytes of a codec's output."""
    return len(bytes(packed)) if not isinstance(packed, (bytes, bytearray)) else len(packed)


def exact(prepared, decoded):
    """True when `decoded` is the codec's input `prepared` bit for bit."""
    got = np.frombuffer(decoded, np.uint8) if isinstance(decoded, (bytes, bytearray)) else np.asarray(decoded)
    return got.tobytes() == np.ascontiguousarray(prepared).tobytes()


MAX_CALLS = 20
"""Most calls of each codec per round of the codec table (on the smallest chunks)."""


def calls_per_round(chunk):
    """Calls of each codec per round on `chunk`: about CHUNK_BYTES of raw data a round,
    1 to MAX_CALLS calls."""
    return min(MAX_CALLS, max(1, CHUNK_BYTES // max(chunk.nbytes, 1)))


def timed_calls(pack, unpack, data, calls, best):
    """Compresses and decompresses `data` `calls` times, keeping the fastest of each in
    `best` ([compress s, decompress s]); returns the last output and its decoding."""
    for _ in range(calls):
        start = time.perf_counter()
        packed = pack(data)
        mid = time.perf_counter()
        decoded = unpack(packed)
        end = time.perf_counter()
        best[0] = min(best[0], mid - start)
        best[1] = min(best[1], end - mid)
    return packed, decoded


def codec_table(emit, quick, rounds):
    """Table 1: the codecs alone, one thread, interleaved rounds."""
    named = codecs()
    emit("## The codecs alone, one thread")
    emit()
    emit(f"Best call of {rounds} interleaved rounds, each codec called as often a round as makes about "
         f"{CHUNK_BYTES // 2**20} MiB of raw data (1 to {MAX_CALLS} calls), "
         "so a small chunk is timed warm as a large one is; MB/s of raw bytes; pcodec and Blosc2 code the chunk's "
         "series laid along time (laid out before the timing). Compare columns within one workload only.")
    for title, chunk in workloads(quick):
        times = {name: [float("inf"), float("inf")] for name in list(named) + ["memcpy"]}
        sizes = {}
        # Each codec's input (karoo's words, the peers' series along time) is laid out
        # once, outside the timing.
        inputs = {name: np.ascontiguousarray(prepare(chunk)) for name, (prepare, _, _) in named.items()}
        for _ in range(rounds):
            for name, (_, pack, unpack) in named.items():
                packed, decoded = timed_calls(pack, unpack, inputs[name], calls_per_round(chunk), times[name])
                if name not in sizes:
                    if not exact(inputs[name], decoded):
                        raise RuntimeError(f"{name} is not bit-exact on {title}")
                    sizes[name] = packed_len(packed)
            for _ in range(calls_per_round(chunk)):
                start = time.perf_counter()
                copy = chunk.copy()
                times["memcpy"][0] = times["memcpy"][1] = min(times["memcpy"][0], time.perf_counter() - start)
                del copy
        emit()
        emit(f"### {title}, {chunk.dtype}, {chunk.nbytes / 2**20:.1f} MiB")
        emit()
        emit("| codec | stored/raw | compress MB/s | decompress MB/s |")
        emit("|---|---|---|---|")
        for name, (pack_s, unpack_s) in times.items():
            ratio = f"{sizes[name] / chunk.nbytes:.3f}" if name in sizes else "1"
            emit(f"| {name} | {ratio} | {chunk.nbytes / pack_s / 1e6:.0f} | {chunk.nbytes / unpack_s / 1e6:.0f} |")


def h5py_table(emit, quick, rounds):
    """Table 2: through h5py against no filter and Bitshuffle+LZ4, all cores, each measurement
    in a process of its own (see h5_timing), with glibc's default allocator and with its
    thresholds pinned."""
    import hdf5plugin

    obs = datasets.meerkat_like(ntime=32 if quick else 128)
    filters = {
        "no filter": {},
        "karoo fast": {"compression": 52033},
        "bitshuffle+lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
    }
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    emit()
    emit(f"## Through h5py: generated observation {obs.shape} {obs.dtype}, {obs.nbytes >> 20} MiB")
    emit()
    emit(f"Files in {folder}, chunk cache off, all cores; each filter is timed in a Python process of "
         f"its own (best of 3 writes and reads), in {rounds} interleaved rounds, the best kept; MB/s of "
         "raw bytes. A process of its own because glibc's allocator adapts to what the process "
         "allocated before: timed after a karoo write in the same process, Bitshuffle+LZ4 writes "
         "nearly twice as fast as in a process of its own. The second table of each chunking pins "
         "the allocator's thresholds (`MALLOC_MMAP_THRESHOLD_` 32 MiB, `MALLOC_TRIM_THRESHOLD_` "
         "64 MiB): no chunk buffer is mmapped or trimmed, which takes the allocator out of the "
         "comparison.")
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        data_path = pathlib.Path(tmp) / "observation.npy"
        np.save(data_path, obs)
        for step in (1, 16):
            chunks = (step,) + obs.shape[1:]
            for pinned in (False, True):
                best = {name: [0.0, 0.0, 0.0] for name in filters}
                for _ in range(rounds):
                    for name, kwargs in filters.items():
                        ratio, write, read = h5_timing.time_filter(data_path, chunks, kwargs, 3, tmp, pinned)
                        best[name] = [ratio, max(best[name][1], write), max(best[name][2], read)]
                emit()
                allocator = "allocator thresholds pinned" if pinned else "default allocator"
                emit(f"### {step} time step(s) per chunk, chunks {chunks}, {allocator}")
                emit()
                emit("| filter | stored/raw | write MB/s | read MB/s | write vs no filter | read vs no filter "
                     "| write vs bitshuffle+lz4 | read vs bitshuffle+lz4 |")
                emit("|---|---|---|---|---|---|---|---|")
                _, none_w, none_r = best["no filter"]
                _, ref_w, ref_r = best["bitshuffle+lz4"]
                for name, (ratio, w, r) in best.items():
                    emit(f"| {name} | {ratio:.3f} | {w:.0f} | {r:.0f} | {w / none_w:.2f} | {r / none_r:.2f} "
                         f"| {w / ref_w:.2f} | {r / ref_r:.2f} |")


def geomean(values):
    """Geometric mean of positive numbers."""
    return float(np.exp(np.mean(np.log(values))))


def figure(value, digits=0):
    """`value` with `digits` decimals, or with two significant digits where that shows
    nothing but zeros (a slow level's MB/s, a small multiple)."""
    return f"{value:.{digits}f}" if value == 0 or value >= 10 ** (1 - digits) else f"{value:.2g}"


def level_table(emit, quick, rounds):
    """Table 3: every effort level of both modes, one thread, on every workload, each level
    timed in the same interleaved rounds as its peer (fast mode: Blosc2 bitshuffle+LZ4 5;
    archive mode: pcodec 8); geometric means over the workloads."""
    named = codecs()
    peers = {"fast": "blosc2 bitshuffle+lz4 5", "archive": "pcodec 8"}
    # Per mode, the levels that code differently (one of each) and the levels that code alike.
    tiers = {
        "fast": {1: "1-3", 0: "0 (default), 4-8", 9: "9"},
        "archive": {1: "1-3", 0: "0 (default), 4-6", 7: "7-8", 9: "9"},
    }
    levels = [(mode, level) for mode, named_levels in tiers.items() for level in named_levels]

    runs = {f"karoo {mode} {level}": karoo_codec(mode, level) for mode, level in levels}
    runs.update({name: named[name] for name in peers.values()})
    per_run = {name: {"ratio": [], "pack": [], "unpack": []} for name in runs}
    chunks = workloads(quick)
    for title, chunk in chunks:
        inputs = {name: np.ascontiguousarray(prepare(chunk)) for name, (prepare, _, _) in runs.items()}
        times = {name: [float("inf"), float("inf")] for name in runs}
        sizes = {}
        for _ in range(rounds):
            for name, (_, pack, unpack) in runs.items():
                packed, decoded = timed_calls(pack, unpack, inputs[name], 1, times[name])
                if name not in sizes:
                    if not exact(inputs[name], decoded):
                        raise RuntimeError(f"{name} is not bit-exact on {title}")
                    sizes[name] = packed_len(packed)
        for name in runs:
            per_run[name]["ratio"].append(sizes[name] / chunk.nbytes)
            per_run[name]["pack"].append(chunk.nbytes / times[name][0] / 1e6)
            per_run[name]["unpack"].append(chunk.nbytes / times[name][1] / 1e6)
    emit()
    emit("## Effort levels, one thread")
    emit()
    emit(f"Every level of both modes on the {len(chunks)} workloads of the first table (levels 1 to 3 code "
         "alike, as do 0 and 4 to 6, and 7 and 8; in fast mode 4 to 8 code alike), one call a round, best of "
         f"{rounds} interleaved rounds (every level and its peer once a round); geometric means over the "
         "workloads of stored/raw and MB/s, and of each workload's figures as a multiple of the peer's in "
         "the same rounds (fast mode: Blosc2 bitshuffle+LZ4 5; archive mode: pcodec 8).")
    emit()
    emit("| codec | level | stored/raw | compress MB/s | decompress MB/s | compress vs peer | decompress vs peer "
         "| stored/raw vs peer |")
    emit("|---|---|---|---|---|---|---|---|")
    for mode, level in levels:
        mine, peer = per_run[f"karoo {mode} {level}"], per_run[peers[mode]]
        vs = {key: geomean(np.array(mine[key]) / np.array(peer[key])) for key in mine}
        emit(f"| karoo {mode} | {tiers[mode][level]} | {geomean(mine['ratio']):.4f} | {figure(geomean(mine['pack']))} "
             f"| {figure(geomean(mine['unpack']))} | {figure(vs['pack'], 2)}x | {figure(vs['unpack'], 2)}x "
             f"| {vs['ratio']:.3f} |")
    for name in peers.values():
        mine = per_run[name]
        emit(f"| {name} | | {geomean(mine['ratio']):.4f} | {figure(geomean(mine['pack']))} "
             f"| {figure(geomean(mine['unpack']))} | 1.00x | 1.00x | 1.000 |")


def doc_section(isa):
    """The section of docs/benchmarks.md for the tables measured on a CPU whose widest vector
    instructions are `isa` (bench_doc.vector_isa())."""
    return {"AVX-512": "speed", "AVX2": "speed-avx2"}.get(isa, "speed-portable")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the best of each is kept")
    parser.add_argument("--doc", action="store_true", help="write the tables into docs/benchmarks.md")
    parser.add_argument("--levels", action="store_true",
                        help="also the table of every effort level (rounds: --level-rounds)")
    parser.add_argument("--level-rounds", type=int, default=3, help="interleaved rounds of the level table")
    parser.add_argument("--only-levels", action="store_true", help="the level table alone")
    args = parser.parse_args()
    command = "python scripts/bench_speed.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    # The level table alone has a section of its own, beside the speed tables.
    section = doc_section(bench_doc.vector_isa()) + ("-levels" if args.only_levels else "")
    with bench_doc.capture(section, command.strip(), enabled=args.doc):
        if not args.only_levels:
            codec_table(print, args.quick, args.rounds)
            h5py_table(print, args.quick, args.rounds)
        if args.levels or args.only_levels:
            level_table(print, args.quick, args.level_rounds)


if __name__ == "__main__":
    main()
