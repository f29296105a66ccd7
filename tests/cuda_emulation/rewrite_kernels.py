#!/usr/bin/env python3
"""Rewrites the CUDA backend's kernel files into C++ for the emulation test.

Each file is copied with:
  * `#include "EmuCuda.h"` first (the CUDA keywords, intrinsics, launch);
  * namespace strata::cuda renamed strata::cuda_emu, so the emulated
    launchers link beside the real ones (the engine library holds both);
  * every `kernel<<<grid, block, shared, stream>>>(args)` turned into
    `::emu::launch(dim3(grid), dim3(block), shared, stream,
                   [&](auto&... a) { kernel(a...); }, args)`;
  * the PTX read of %globaltimer as ::emu::globaltimer();
  * with --small-grids, blocks of 64 threads (the 1024-thread reductions
    keep theirs: CUB's block size is their shared memory's), the grid caps
    cut to two blocks and 32-bit indices refused, so the grid-stride loops
    turn several times on the test's small shapes and the 64-bit index
    paths run.
A pattern that no longer matches fails the build: a changed kernel file
must not silently escape a rewrite.

usage: rewrite_kernels.py [--small-grids] OUT_DIR FILE...
"""
import os
import re
import sys

# (file name, pattern, replacement, expected count) for --small-grids.
SMALL_GRIDS = [
    ("CudaLaunch.cuh", "kThreads = 256;", "kThreads = 64;", 1),
    ("CudaLaunch.cuh", "kMaxBlocks = 65535;", "kMaxBlocks = 2;", 1),
    ("CudaChannelKernels.cu", "kReduceBlocks = 1024;", "kReduceBlocks = 4;", 1),
    ("CudaKernels.cu", "constexpr int kThreads = 256;", "constexpr int kThreads = 64;", 1),
    ("CudaKernels.cu", "(n + kThreads - 1) / kThreads, 1, 8192)", "(n + kThreads - 1) / kThreads, 1, 2)", 1),
    ("CudaKernels.cu", "(rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, 65535)",
     "(rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, 2)", 1),
    ("CudaKernels.cu", "(rows + kTile - 1) / kTile, 65535)", "(rows + kTile - 1) / kTile, 2)", 1),
    ("CudaKernels.cu", "std::min<int64_t>(batch, 65535)", "std::min<int64_t>(batch, 2)", 1),
    ("CudaImageKernels.cu", "return std::max(a, b) <= (int64_t{1} << 30);",
     "return (void)a, (void)b, false;", 1),
]


def fail(msg):
    sys.exit("rewrite_kernels.py: " + msg)


def matching(text, i, open_ch, close_ch, step):
    """Index of the bracket matching text[i], scanning by step (+1/-1)."""
    depth = 0
    while 0 <= i < len(text):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += step
    fail("unbalanced " + open_ch + close_ch)


def split_top_level(text):
    """Splits at the commas outside parentheses, brackets and braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def rewrite_launches(text):
    out, pos = [], 0
    while True:
        at = text.find("<<<", pos)
        if at < 0:
            out.append(text[pos:])
            return "".join(out)
        # The kernel's name, with its template arguments if any, before `<<<`.
        k = at
        while text[k - 1].isspace():
            k -= 1
        if text[k - 1] == ">":
            k = matching(text, k - 1, ">", "<", -1)
        while text[k - 1].isalnum() or text[k - 1] in "_:":
            k -= 1
        kernel = re.sub(r"\s+", " ", text[k:at].strip())
        end = text.find(">>>", at)
        config = split_top_level(text[at + 3:end])
        if not 2 <= len(config) <= 4:
            fail("launch of %s: %d configuration arguments" % (kernel, len(config)))
        config += ["0", "nullptr"][len(config) - 2:]
        paren = end + 3
        while text[paren].isspace():
            paren += 1
        if text[paren] != "(":
            fail("launch of %s: no argument list" % kernel)
        close = matching(text, paren, "(", ")", 1)
        args = text[paren + 1:close].strip()
        out.append(text[pos:k])
        out.append("::emu::launch(dim3(%s), dim3(%s), static_cast<size_t>(%s), %s, "
                   "[&](auto&... emu_a) { %s(emu_a...); }%s)" %
                   (config[0], config[1], config[2], config[3], kernel, ", " + args if args else ""))
        pos = close + 1


def rewrite(name, text, small_grids):
    text = re.sub(r"\bstrata::cuda\b", "strata::cuda_emu", text)
    text = re.sub(r'asm\s+volatile\s*\(\s*"mov\.u64 %0, %%globaltimer;"\s*:\s*"=l"\((\w+)\)\s*\)',
                  r"\1 = ::emu::globaltimer()", text)
    if re.search(r"\basm\b", re.sub(r"//.*", "", text)):
        fail(name + ": inline PTX the emulation does not know")
    text = rewrite_launches(text)
    if small_grids:
        for file, pattern, replacement, count in SMALL_GRIDS:
            if file != name:
                continue
            if text.count(pattern) != count:
                fail("%s: expected %d of %r for --small-grids, found %d" % (name, count, pattern, text.count(pattern)))
            text = text.replace(pattern, replacement)
    header = "// Generated by tests/cuda_emulation/rewrite_kernels.py from engine/backend/cuda/%s: do not edit.\n" % name
    return header + '#include "EmuCuda.h"\n' + text


def main(argv):
    small_grids = "--small-grids" in argv
    argv = [a for a in argv if a != "--small-grids"]
    if len(argv) < 2:
        fail(__doc__)
    out_dir, files = argv[0], argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    for path in files:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            text = rewrite(name, f.read(), small_grids)
        # .cu compiled as C++: named .cpp so the build treats it so.
        target = os.path.join(out_dir, name + ".cpp" if name.endswith(".cu") else name)
        with open(target + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(target + ".tmp", target)


if __name__ == "__main__":
    main(sys.argv[1:])
