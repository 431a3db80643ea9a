// pto_ref.cpp - an independent reference for `collsim run --minmax pto`:
// max/min folded with C++'s std::max / std::min, the expression of
// pto-isa's CPU simulator (TMAX: dst = std::max(src0, src1), the
// reduction calling TMAX(acc, acc, recv)), in each algorithm's operand
// order as docs/algorithms.md §6 gives it. Written from the docs, sharing
// no code with collsim (not even its npy reader).
//
//   pto_ref gen DTYPE NRANKS IN.npy          special-value inputs (N, C)
//   pto_ref check ALGO OP DTYPE IN.npy OUT.npy
//
// DTYPE fp32|fp16|bf16 (npy '<f4', '<f2', '<u2' = bf16 bits), ALGO
// mesh|ring|host, OP max|min. fp16/bf16 values are widened to float,
// folded with std::max/std::min on float and narrowed back (exact: the
// result is one of the operands). check compares every rank's row bit for
// bit, any NaN equal to any NaN (collsim's results are quiet NaNs; std::max
// returns a signalling NaN operand unchanged), prints one line and exits 0
// when all agree, 1 on a mismatch, 2 on bad input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum Dtype { FP32, FP16, BF16 };

int esize(Dtype t) { return t == FP32 ? 4 : 2; }

[[noreturn]] void die(const std::string &m)
{
  std::fprintf(stderr, "pto_ref: %s\n", m.c_str());
  std::exit(2);
}

float from_bits(Dtype t, uint32_t b)
{
  float f;
  if (t == FP32) {
    std::memcpy(&f, &b, 4);
  } else if (t == BF16) {
    uint32_t w = b << 16;
    std::memcpy(&f, &w, 4);
  } else {
    uint16_t h = (uint16_t)b;
    _Float16 x;
    std::memcpy(&x, &h, 2);
    f = (float)x;
  }
  return f;
}

// Exact for a float that came from from_bits (max/min return an operand).
uint32_t to_bits(Dtype t, float f)
{
  uint32_t w;
  std::memcpy(&w, &f, 4);
  if (t == FP32)
    return w;
  if (t == BF16)
    return w >> 16;
  _Float16 x = (_Float16)f;
  uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}

bool is_nan(Dtype t, uint32_t b)
{
  if (t == FP32)
    return (b & 0x7fffffffu) > 0x7f800000u;
  if (t == BF16)
    return (b & 0x7fffu) > 0x7f80u;
  return (b & 0x7fffu) > 0x7c00u;
}

// The values that matter, as bits of each dtype: NaNs (quiet, with a
// payload, negative), ±0, ±inf, subnormals, the largest finite, ordinary.
std::vector<uint32_t> specials(Dtype t)
{
  if (t == FP32)
    return {0x7fc00000u, 0x7fc12345u, 0xffc00000u, 0x00000000u, 0x80000000u,
            0x7f800000u, 0xff800000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu,
            0xff7fffffu, 0x3f800000u, 0xbf800000u, 0x40000000u, 0x00800000u};
  if (t == BF16)
    return {0x7fc0u, 0x7fc5u, 0xffc0u, 0x0000u, 0x8000u, 0x7f80u, 0xff80u,
            0x0001u, 0x807fu, 0x7f7fu, 0xff7fu, 0x3f80u, 0xbf80u, 0x4000u,
            0x0080u};
  return {0x7e00u, 0x7e2au, 0xfe00u, 0x0000u, 0x8000u, 0x7c00u, 0xfc00u,
          0x0001u, 0x83ffu, 0x7bffu, 0xfbffu, 0x3c00u, 0xbc00u, 0x4000u,
          0x0400u};
}

Dtype dtype_of(const std::string &s)
{
  if (s == "fp32") return FP32;
  if (s == "fp16") return FP16;
  if (s == "bf16") return BF16;
  die("dtype '" + s + "' is not accepted: expected fp32, fp16 or bf16");
}

const char *descr(Dtype t) { return t == FP32 ? "<f4" : t == FP16 ? "<f2" : "<u2"; }

struct Npy {
  Dtype t;
  uint32_t n = 0;
  uint64_t count = 0;
  std::vector<uint32_t> v; // row-major bits
  uint32_t at(uint32_t r, uint64_t i) const { return v[r * count + i]; }
};

void write_npy(const char *path, const Npy &a)
{
  std::string h = std::string("{'descr': '") + descr(a.t) +
                  "', 'fortran_order': False, 'shape': (" +
                  std::to_string(a.n) + ", " + std::to_string(a.count) + "), }";
  while ((10 + h.size() + 1) % 64)
    h += ' ';
  h += '\n';
  FILE *f = std::fopen(path, "wb");
  if (!f)
    die(std::string("cannot write ") + path);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)(h.size() & 0xff),
                           (unsigned char)(h.size() >> 8)};
  std::fwrite(pre, 1, 10, f);
  std::fwrite(h.data(), 1, h.size(), f);
  for (uint32_t b : a.v)
    std::fwrite(&b, (size_t)esize(a.t), 1, f); // little-endian low bytes
  if (std::fclose(f) != 0)
    die(std::string("cannot write ") + path);
}

// Reads a v1.0 (N, C) file of dtype t; the shape from the header's text.
Npy read_npy(const char *path, Dtype t)
{
  FILE *f = std::fopen(path, "rb");
  unsigned char pre[10];
  if (!f || std::fread(pre, 1, 10, f) != 10 || std::memcmp(pre, "\x93NUMPY\x01", 7))
    die(std::string(path) + ": not a version 1.0 .npy file");
  std::string h(pre[8] | pre[9] << 8, '\0');
  if (std::fread(&h[0], 1, h.size(), f) != h.size())
    die(std::string(path) + ": short header");
  Npy a;
  a.t = t;
  size_t s = h.find("'shape': (");
  if (h.find(descr(t)) == std::string::npos || s == std::string::npos ||
      std::sscanf(h.c_str() + s + 10, "%u, %lu", &a.n, (unsigned long *)&a.count) != 2)
    die(std::string(path) + ": expected descr " + descr(t) + " and shape (N, C)");
  a.v.resize((size_t)a.n * a.count);
  for (auto &b : a.v) {
    b = 0;
    if (std::fread(&b, (size_t)esize(t), 1, f) != 1)
      die(std::string(path) + ": short data");
  }
  std::fclose(f);
  return a;
}

// Every ordered pair of specials on every ordered pair of ranks (the other
// ranks a deterministic mix of specials), then a ragged tail of 7.
Npy gen(Dtype t, uint32_t n)
{
  std::vector<uint32_t> s = specials(t);
  const uint64_t v = s.size(), pairs = n > 1 ? (uint64_t)n * (n - 1) : 1;
  Npy a;
  a.t = t;
  a.n = n;
  a.count = v * v * pairs + 7;
  a.v.resize((size_t)n * a.count);
  uint32_t seed = 12345;
  for (uint64_t e = 0; e < a.count; e++) {
    uint64_t i = e % v, j = e / v % v, pr = e / (v * v) % pairs;
    uint32_t p = (uint32_t)(pr % n), q = n > 1 ? (uint32_t)(pr / n) : 0;
    q = q >= p ? q + 1 : q; // q != p
    for (uint32_t r = 0; r < n; r++) {
      seed = seed * 1103515245u + 12345u;
      uint32_t b = s[(seed >> 16) % v];
      if (e < v * v * pairs && r == p) b = s[i];
      if (e < v * v * pairs && r == q && n > 1) b = s[j];
      a.v[r * a.count + e] = b;
    }
  }
  return a;
}

float op(bool max, float a, float b) { return max ? std::max(a, b) : std::min(a, b); }

// §4.2: B(i) = floor(i*SIZE/NR) (fp32), min(SIZE, ceil(i*SIZE/(16*NR))*16).
uint64_t bound(Dtype t, uint32_t n, uint64_t size, uint32_t i)
{
  if (t == FP32)
    return (uint64_t)i * size / n;
  uint64_t d = 16ull * n, b = ((uint64_t)i * size + d - 1) / d * 16;
  return std::min(size, b);
}

// The owner of element e: the largest non-empty segment k with B(k) <= e.
uint32_t owner(Dtype t, uint32_t n, uint64_t size, uint64_t e)
{
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (bound(t, n, size, i) < bound(t, n, size, i + 1) && bound(t, n, size, i) <= e)
      k = i;
  return k;
}

// Rank m's expected element e. Mesh/host: acc = x_m, then acc = op(acc,
// x_p) for the peers ascending. Ring, segment k: acc = x_{k+1}, then each
// rank r = k+2, ..., k on the way folds its own value in: acc = op(x_r, acc).
float expect(const Npy &a, const std::string &algo, bool max, uint32_t m, uint64_t e)
{
  const uint32_t n = a.n;
  auto x = [&](uint32_t r) { return from_bits(a.t, a.at(r, e)); };
  if (algo == "ring") {
    uint32_t k = owner(a.t, n, a.count, e), r = (k + 1) % n;
    float acc = x(r);
    for (uint32_t step = 1; step < n; step++) {
      r = (r + 1) % n;
      acc = op(max, x(r), acc);
    }
    return acc;
  }
  float acc = x(m);
  for (uint32_t p = 0; p < n; p++)
    if (p != m)
      acc = op(max, acc, x(p));
  return acc;
}

int check(const std::string &algo, const std::string &opname, Dtype t,
          const char *in_path, const char *out_path)
{
  if (algo != "mesh" && algo != "ring" && algo != "host")
    die("algo '" + algo + "' is not accepted: expected mesh, ring or host");
  if (opname != "max" && opname != "min")
    die("op '" + opname + "' is not accepted: expected max or min");
  Npy in = read_npy(in_path, t), out = read_npy(out_path, t);
  if (in.n != out.n || in.count != out.count)
    die("input and output shapes differ");
  uint64_t bad = 0;
  for (uint32_t m = 0; m < in.n; m++)
    for (uint64_t e = 0; e < in.count; e++) {
      uint32_t want = to_bits(t, expect(in, algo, opname == "max", m, e));
      uint32_t got = out.at(m, e);
      bool same = is_nan(t, want) ? is_nan(t, got) : want == got;
      if (!same && bad++ == 0)
        std::printf("first mismatch: rank %u element %lu: std::%s gives 0x%x, "
                    "collsim 0x%x\n", m, (unsigned long)e, opname.c_str(), want, got);
    }
  std::printf("%s %s %s %u ranks x %lu: %s (%lu mismatches)\n", algo.c_str(),
              opname.c_str(), descr(t), in.n, (unsigned long)in.count,
              bad ? "MISMATCH" : "bit-identical", (unsigned long)bad);
  return bad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
  if (argc == 5 && !std::strcmp(argv[1], "gen")) {
    long n = std::strtol(argv[3], nullptr, 10);
    if (n < 1 || n > 64)
      die(std::string("ranks '") + argv[3] + "' is not accepted: expected 1..64");
    write_npy(argv[4], gen(dtype_of(argv[2]), (uint32_t)n));
    return 0;
  }
  if (argc == 7 && !std::strcmp(argv[1], "check"))
    return check(argv[2], argv[3], dtype_of(argv[4]), argv[5], argv[6]);
  die("usage: pto_ref gen DTYPE NRANKS IN.npy | check ALGO OP DTYPE IN.npy OUT.npy");
}
