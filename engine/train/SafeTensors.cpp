#include "train/SafeTensors.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/AtomicFile.h"
#include "core/Error.h"
#include "core/JsonInteger.h"

namespace strata {

const Tensor* SafeTensorsFile::find(const std::string& name) const {
  for (auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

namespace {
uint32_t crc_of(const std::string& bytes, size_t begin) {
  // crc32_z: crc32 takes a 32-bit length, and past 4 GiB would check only
  // the first (size mod 4 GiB) bytes.
  return static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data() + begin), bytes.size() - begin));
}

// A JSON array of whole numbers that each fit I; nullopt for anything else
// (the JSON library would cast 1e30 to an integer: undefined behaviour).
template <typename I>
std::optional<std::vector<I>> integers(const nlohmann::json& v) {
  if (!v.is_array()) return std::nullopt;
  std::vector<I> out;
  for (const nlohmann::json& e : v) {
    if (!json_integer_fits<I>(e, false)) return std::nullopt;
    out.push_back(e.get<I>());
  }
  return out;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}
}  // namespace

void write_safetensors(const std::string& path, const SafeTensorsFile& file) {
  nlohmann::ordered_json header;
  std::string data;
  for (auto& [name, on_device] : file.tensors) {
    if (name == "__metadata__") throw runtime_error("safetensors: reserved tensor name __metadata__");
    if (on_device.dtype() == DType::UInt8) throw runtime_error("safetensors: tensor '" + name + "' is uint8 (raw input), not saved");
    const Tensor t = on_device.to(Device{});  // device -> host on save
    const size_t begin = data.size();
    const size_t bytes = static_cast<size_t>(t.numel()) * 4;
    data.append(reinterpret_cast<const char*>(t.dtype() == DType::Float32 ? static_cast<const void*>(t.data())
                                                                          : static_cast<const void*>(t.ints())),
                bytes);
    header[name] = {{"dtype", t.dtype() == DType::Float32 ? "F32" : "I32"},
                    {"shape", t.shape().dims()},
                    {"data_offsets", {begin, begin + bytes}}};
  }
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (auto& [k, v] : file.metadata) meta[k] = v;
  meta["strata_crc32"] = hex(static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(data.data()), data.size())));
  header["__metadata__"] = meta;
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';  // keeps the data 8-byte aligned, as the reference writer does
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += h;
  out += data;
  write_file_atomically(path, out);
}

SafeTensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot open checkpoint file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.size() < 8) throw bad_input(path + ": truncated (no safetensors header)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])) << (8 * i);
  if (n > bytes.size() - 8) throw bad_input(path + ": truncated (header says " + std::to_string(n) + " bytes)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::exception&) {
    throw bad_input(path + ": corrupt safetensors header (not JSON)");
  }
  if (!header.is_object()) throw bad_input(path + ": corrupt safetensors header (not a JSON object)");
  const size_t data_begin = 8 + n;
  SafeTensorsFile f;
  if (header.contains("__metadata__") && header["__metadata__"].is_object())
    for (auto& [k, v] : header["__metadata__"].items())
      if (v.is_string()) f.metadata[k] = v.get<std::string>();
  if (f.metadata.count("strata_crc32") && f.metadata["strata_crc32"] != hex(crc_of(bytes, data_begin)))
    throw bad_input(path + ": checksum mismatch: the file is corrupted or truncated");
  const size_t data_size = bytes.size() - data_begin;
  // Tensors in data order (the JSON object itself is unordered).
  std::vector<std::pair<size_t, std::string>> order;
  for (auto& [name, spec] : header.items()) {
    if (name == "__metadata__") continue;
    const auto off = spec.is_object() ? spec.find("data_offsets") : spec.end();
    const bool ordered = spec.is_object() && off != spec.end() && off->is_array() && !off->empty() &&
                         (*off)[0].is_number_unsigned();
    order.emplace_back(ordered ? (*off)[0].get<size_t>() : 0, name);
  }
  std::sort(order.begin(), order.end());
  for (auto& [begin_unused, name] : order) {
    const auto& spec = header[name];
    try {
      const std::string dtype = spec.at("dtype");
      const auto shape_read = integers<int64_t>(spec.at("shape"));
      if (!shape_read) throw bad_input(path + ": tensor '" + name + "': shape is not a list of whole numbers");
      const auto off_read = integers<size_t>(spec.at("data_offsets"));
      if (!off_read) throw bad_input(path + ": tensor '" + name + "': data_offsets is not a list of whole numbers");
      const std::vector<int64_t>& shape = *shape_read;
      const std::vector<size_t>& off = *off_read;
      if (dtype != "F32" && dtype != "I32") throw bad_input(path + ": tensor '" + name + "': dtype " + dtype + " unsupported");
      // The element count, checked against the file before anything is
      // allocated (a forged shape must not ask for terabytes or overflow).
      uint64_t elements = 1;
      for (int64_t d : shape) {
        if (d < 0 || (d > 0 && elements > data_size / 4 / static_cast<uint64_t>(d)))
          throw bad_input(path + ": tensor '" + name + "': shape larger than the file's data");
        elements *= static_cast<uint64_t>(d);
      }
      Tensor t = Tensor::empty(Shape(shape), dtype == "F32" ? DType::Float32 : DType::Int32);
      if (off.size() != 2 || off[1] < off[0] || off[1] > data_size || off[1] - off[0] != static_cast<size_t>(t.numel()) * 4)
        throw bad_input(path + ": tensor '" + name + "': data offsets do not match its shape or the file is truncated");
      std::memcpy(t.dtype() == DType::Float32 ? static_cast<void*>(t.data()) : static_cast<void*>(t.ints()),
                  bytes.data() + data_begin + off[0], off[1] - off[0]);
      f.tensors.emplace_back(name, t);
    } catch (const nlohmann::json::exception&) {
      throw bad_input(path + ": tensor '" + name + "': malformed header entry");
    }
  }
  return f;
}

}  // namespace strata
