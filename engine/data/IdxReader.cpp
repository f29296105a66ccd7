#include "data/IdxReader.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/Error.h"

namespace strata {

std::vector<uint8_t> read_maybe_gzip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (std::filesystem::exists(path, ec)) throw bad_input(path + ": not a regular file");
    throw bad_input(path + ": no such file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot open file");
  std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (raw.size() < 2 || raw[0] != 0x1f || raw[1] != 0x8b) return raw;

  // gzip: inflate with automatic header detection (windowBits 15 + 32).
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw runtime_error(path + ": zlib initialisation failed");
  std::vector<uint8_t> out;
  std::vector<uint8_t> chunk(1 << 20);
  // zlib takes at most 4 GiB of input at a time (avail_in is 32-bit): a
  // bigger file is fed in slices, or it would read as truncated.
  size_t fed = 0;
  auto feed = [&] {
    const size_t slice = std::min<size_t>(raw.size() - fed, std::numeric_limits<uInt>::max());
    zs.next_in = raw.data() + fed;
    zs.avail_in = static_cast<uInt>(slice);
    fed += slice;
  };
  feed();
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0 && fed < raw.size()) feed();
    zs.next_out = chunk.data();
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      throw bad_input(path + ": corrupt or truncated gzip data" + (zs.msg ? std::string(" (") + zs.msg + ")" : ""));
    }
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - zs.avail_out));
    if (rc == Z_OK && zs.avail_in == 0 && fed == raw.size() && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw bad_input(path + ": truncated gzip data");
    }
  }
  inflateEnd(&zs);
  return out;
}

IdxArray read_idx(const std::string& path) {
  std::vector<uint8_t> bytes = read_maybe_gzip(path);
  if (bytes.size() < 4) throw bad_input(path + ": too short for an IDX header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw bad_input(path + ": wrong magic number (not an IDX file; expected 00 00 08 0N)");
  if (bytes[2] != 0x08) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", bytes[2]);
    throw bad_input(path + ": IDX element type " + type + " unsupported (only unsigned bytes, 0x08)");
  }
  const int rank = bytes[3];
  if (rank < 1 || rank > 4) throw bad_input(path + ": IDX rank " + std::to_string(rank) + " unsupported");
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) throw bad_input(path + ": truncated IDX header");
  IdxArray a;
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const uint8_t* p = bytes.data() + 4 + 4 * i;
    const int64_t d = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | int64_t{p[3]};
    a.dims.push_back(d);
    // Checked as it grows: a hostile header must not overflow the product.
    if (d != 0 && count > static_cast<int64_t>(bytes.size()) / d)
      throw bad_input(path + ": truncated: header dimensions promise more data than the file holds");
    count *= d;
  }
  if (static_cast<int64_t>(bytes.size() - header) < count)
    throw bad_input(path + ": truncated: header promises " + std::to_string(count) + " bytes of data, file has " +
                    std::to_string(bytes.size() - header));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.begin() + static_cast<std::ptrdiff_t>(header + static_cast<size_t>(count)));
  return a;
}

Dataset load_idx_dataset(const std::string& images_path, const std::string& labels_path) {
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.dims.size() != 3) throw bad_input(images_path + ": expected an image array (n, rows, cols), got rank " + std::to_string(images.dims.size()));
  if (labels.dims.size() != 1) throw bad_input(labels_path + ": expected a label vector, got rank " + std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw bad_input(images_path + " has " + std::to_string(images.dims[0]) + " images but " + labels_path + " has " +
                    std::to_string(labels.dims[0]) + " labels");
  std::vector<int32_t> l(labels.data.begin(), labels.data.end());
  int classes = 0;
  for (auto v : l) classes = std::max(classes, v + 1);
  return Dataset::from_uint8(Shape{images.dims[1], images.dims[2], 1}, std::move(images.data), std::move(l), std::max(classes, 10));
}

}  // namespace strata
