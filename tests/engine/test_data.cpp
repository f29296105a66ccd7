// Data readers and the input pipeline: IDX (plain and gzip) including
// corrupted files, CSV, the synthetic generator, BatchPipeline, validation
// split, and the real Fashion-MNIST when it is installed.
#include <QtTest/QtTest>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "TestUtil.h"
#include "data/BatchPipeline.h"
#include "data/CsvReader.h"
#include "data/Dataset.h"
#include "data/FashionMnist.h"
#include "data/IdxReader.h"
#include "data/Synthetic.h"
#include "distribute/DistributedDataset.h"

using namespace strata;

namespace {

using testutil::idx_bytes;
using testutil::write_file;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  QVERIFY(f != nullptr);
  QCOMPARE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  QCOMPARE(gzclose(f), Z_OK);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A dataset whose single feature is the example's index: batches show which
// examples they hold.
// 23 standardised 2x3 images of 4 classes.
Dataset small_images() {
  std::vector<uint8_t> pixels(23 * 6);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  std::vector<int32_t> labels(23);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 4);
  Dataset images = Dataset::from_uint8(Shape{2, 3, 1}, pixels, labels, 4);
  images.set_scale(1.0f / 255.0f);
  images.standardize_from(images);
  return images;
}

std::shared_ptr<Dataset> indexed_dataset(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::vector<int32_t> l(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>(i);
    l[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3);
  }
  return std::make_shared<Dataset>(Dataset::from_float(Shape{1}, std::move(v), std::move(l), 3));
}

std::vector<std::vector<int64_t>> epoch_batches(BatchPipeline& p, int64_t epoch, int64_t first = 0) {
  p.begin_epoch(epoch, first);
  std::vector<std::vector<int64_t>> out;
  while (auto b = p.next()) {
    std::vector<int64_t> ids;
    for (int64_t r = 0; r < b->size(); ++r) {
      ids.push_back(static_cast<int64_t>(b->features.data()[r]));
      if (b->labels.ints()[r] != ids.back() % 3) return {};  // features and labels must stay paired
    }
    out.push_back(ids);
  }
  return out;
}

}  // namespace

class TestData : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string path(const char* name) const { return (tmp_.path() + "/" + name).toStdString(); }

  // 5 images of 3x4 and their labels, written plain or gzip.
  std::vector<uint8_t> pixels_;
  void write_idx_pair(const std::string& images, const std::string& labels, bool gz, uint32_t n_labels = 5) {
    pixels_.resize(5 * 3 * 4);
    for (size_t i = 0; i < pixels_.size(); ++i) pixels_[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    std::vector<uint8_t> lab;
    for (uint32_t i = 0; i < n_labels; ++i) lab.push_back(static_cast<uint8_t>((i * 3) % 10));
    auto img = idx_bytes({5, 3, 4}, pixels_);
    auto lb = idx_bytes({n_labels}, lab);
    if (gz) {
      write_gzip(images, img);
      write_gzip(labels, lb);
    } else {
      write_file(images, img);
      write_file(labels, lb);
    }
  }

private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  // ---- IDX ------------------------------------------------------------------

  void idx_round_trip_data() {
    QTest::addColumn<bool>("gz");
    QTest::newRow("plain") << false;
    QTest::newRow("gzip") << true;
  }
  void idx_round_trip() {
    QFETCH(bool, gz);
    // The name does not decide: gzip is detected from the bytes.
    const std::string images = path(gz ? "rt-images.idx" : "rt-images.idx.gz");
    const std::string labels = path(gz ? "rt-labels.idx" : "rt-labels.idx.gz");
    write_idx_pair(images, labels, gz);
    IdxArray a = read_idx(images);
    QCOMPARE(a.dims, (std::vector<int64_t>{5, 3, 4}));
    QVERIFY(std::equal(a.data.begin(), a.data.end(), pixels_.begin(), pixels_.end()));

    Dataset d = load_idx_dataset(images, labels);
    QCOMPARE(d.size(), int64_t{5});
    QCOMPARE(d.example_shape(), (Shape{3, 4, 1}));
    QVERIFY(d.is_uint8());
    QCOMPARE(d.num_classes(), 10);
    for (int64_t i = 0; i < 5; ++i) QCOMPARE(d.labels()[static_cast<size_t>(i)], static_cast<int32_t>((i * 3) % 10));
    // Batches are converted to floats in [0, 1].
    Batch b = d.range(0, 5);
    QCOMPARE(b.features.shape(), (Shape{5, 3, 4, 1}));
    for (size_t i = 0; i < pixels_.size(); ++i)
      QVERIFY(std::fabs(b.features.data()[i] - pixels_[i] / 255.0f) < 1e-6f);
    auto raw = d.pixels(2);
    QCOMPARE(raw.size(), size_t(12));
    QCOMPARE(raw[0], pixels_[24]);
  }

  void idx_truncated_data() {
    QTest::addColumn<bool>("gz");
    QTest::addColumn<int>("keep");  // bytes of the (uncompressed or compressed) file kept
    QTest::newRow("plain: data cut short") << false << 16 + 50;
    QTest::newRow("plain: header cut short") << false << 9;
    QTest::newRow("plain: shorter than a magic number") << false << 3;
    QTest::newRow("plain: empty") << false << 0;
    QTest::newRow("gzip: stream cut short") << true << -12;
  }
  void idx_truncated() {
    QFETCH(bool, gz);
    QFETCH(int, keep);
    const std::string images = path("trunc-images"), labels = path("trunc-labels");
    write_idx_pair(images, labels, gz);
    auto bytes = read_bytes(images);
    bytes.resize(keep >= 0 ? static_cast<size_t>(keep) : bytes.size() - static_cast<size_t>(-keep));
    write_file(images, bytes);
    STRATA_EXPECT_ERROR(read_idx(images), ErrorKind::BadInput, images);
    STRATA_EXPECT_ERROR(load_idx_dataset(images, labels), ErrorKind::BadInput, images);
  }

  void idx_truncated_message_says_so() {
    const std::string images = path("trunc2-images");
    auto bytes = idx_bytes({5, 3, 4}, std::vector<uint8_t>(30, 1));
    write_file(images, bytes);
    STRATA_EXPECT_ERROR(read_idx(images), ErrorKind::BadInput, images, "truncated");
  }

  void idx_wrong_magic() {
    const std::string p = path("magic.idx");
    write_file(p, idx_bytes({2, 2}, {1, 2, 3, 4}, 0x08, 0x42));
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p, "magic");
    // A text file is not an IDX file either.
    write_text(p, "hello, this is not an image file\n");
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p, "magic");
    // Gzip of a non-IDX payload: the check is on the inflated bytes.
    write_gzip(p, std::vector<uint8_t>{'P', 'K', 3, 4, 0, 0, 0, 0});
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p, "magic");
  }

  void idx_unsupported_type_and_rank() {
    const std::string p = path("type.idx");
    write_file(p, idx_bytes({2}, std::vector<uint8_t>(8, 0), 0x0D));  // 0x0D = float32
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p, "unsupported");
    write_file(p, idx_bytes({}, {}, 0x08));
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p, "rank");
    // Images of rank 2 / labels of rank 2 are refused by the dataset loader.
    const std::string img = path("rank-images"), lab = path("rank-labels");
    write_file(img, idx_bytes({2, 6}, std::vector<uint8_t>(12, 0)));
    write_file(lab, idx_bytes({2}, {0, 1}));
    STRATA_EXPECT_ERROR(load_idx_dataset(img, lab), ErrorKind::BadInput, img);
    write_file(img, idx_bytes({2, 2, 3}, std::vector<uint8_t>(12, 0)));
    write_file(lab, idx_bytes({2, 1}, {0, 1}));
    STRATA_EXPECT_ERROR(load_idx_dataset(img, lab), ErrorKind::BadInput, lab);
  }

  void idx_type_named_in_hex() {
    const std::string p = path("type-hex.idx");
    write_file(p, idx_bytes({2}, std::vector<uint8_t>(8, 0), 0x0D));
    // The element type in hex, as the IDX format names it (0x0D, not 0x13).
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p, "0x0d");
  }

  void idx_header_size_overflow() {
    // dims 2 x 2^31 x 2^31: the element count (2^63) overflows int64; the
    // reader must refuse the header as bad input.
    const std::string p = path("overflow.idx");
    write_file(p, idx_bytes({2, 0x80000000u, 0x80000000u}, std::vector<uint8_t>(64, 7)));
    STRATA_EXPECT_ERROR(read_idx(p), ErrorKind::BadInput, p);
  }

  void idx_count_mismatch() {
    const std::string images = path("mm-images"), labels = path("mm-labels");
    write_idx_pair(images, labels, false, 4);
    STRATA_EXPECT_ERROR(load_idx_dataset(images, labels), ErrorKind::BadInput, images, labels, "5 images", "4 labels");
  }

  void idx_missing_file() {
    const std::string images = path("no-such-images.gz"), labels = path("no-such-labels.gz");
    STRATA_EXPECT_ERROR(read_idx(images), ErrorKind::BadInput, images);
    write_idx_pair(path("ok-images"), path("ok-labels"), true);
    STRATA_EXPECT_ERROR(load_idx_dataset(path("ok-images"), labels), ErrorKind::BadInput, labels);
  }

  void idx_path_is_a_directory() {
    const std::string dir = tmp_.path().toStdString();
    STRATA_EXPECT_ERROR(read_idx(dir), ErrorKind::BadInput, dir);
  }

  // ---- CSV ------------------------------------------------------------------

  void csv_header_modes_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("header");  // CsvOptions::Header
    QTest::addColumn<int>("rows");
    QTest::newRow("auto, with header") << "a,b,label\n1,2,0\n3,4,1\n" << int(CsvOptions::Header::Auto) << 2;
    QTest::newRow("auto, no header") << "1,2,0\n3,4,1\n5,6,2\n" << int(CsvOptions::Header::Auto) << 3;
    QTest::newRow("yes, numeric first row skipped") << "9,9,9\n1,2,0\n3,4,1\n" << int(CsvOptions::Header::Yes) << 2;
    QTest::newRow("no") << "1,2,0\n3,4,1\n" << int(CsvOptions::Header::No) << 2;
    QTest::newRow("auto, CRLF, blank lines, spaces") << "x , y ,class\r\n\r\n 1 , 2 , 0\r\n3,4,1\r\n\r\n" << int(CsvOptions::Header::Auto) << 2;
  }
  void csv_header_modes() {
    QFETCH(QString, text);
    QFETCH(int, header);
    QFETCH(int, rows);
    const std::string p = path("header.csv");
    write_text(p, text.toStdString());
    CsvOptions o;
    o.header = static_cast<CsvOptions::Header>(header);
    Dataset d = load_csv(p, o);
    QCOMPARE(d.size(), int64_t(rows));
    QCOMPARE(d.example_shape(), (Shape{2}));
    QVERIFY(!d.is_uint8());
    Batch b = d.range(0, d.size());
    QCOMPARE(b.features.data()[0], 1.0f);
    QCOMPARE(b.features.data()[1], 2.0f);
    QCOMPARE(b.labels.ints()[0], 0);
    QCOMPARE(b.labels.ints()[1], 1);
  }

  void csv_header_no_but_text() {
    const std::string p = path("text-header.csv");
    write_text(p, "a,b,label\n1,2,0\n");
    CsvOptions o;
    o.header = CsvOptions::Header::No;
    STRATA_EXPECT_ERROR(load_csv(p, o), ErrorKind::BadInput, p + ":1", "column 1", "'a'");
  }

  void csv_label_column() {
    const std::string p = path("label.csv");
    write_text(p, "2,0.5,1.5\n0,2.5,3.5\n1,4.5,5.5\n");
    CsvOptions first;
    first.label_column = 0;
    Dataset d = load_csv(p, first);
    QCOMPARE(d.size(), int64_t{3});
    QCOMPARE(d.num_classes(), 3);
    Batch b = d.range(0, 3);
    QCOMPARE(b.labels.ints()[0], 2);
    QCOMPARE(b.labels.ints()[1], 0);
    QCOMPARE(b.features.data()[0], 0.5f);
    QCOMPARE(b.features.data()[1], 1.5f);
    QCOMPARE(b.features.data()[5], 5.5f);

    write_text(p, "0.5,1.5,2\n2.5,3.5,0\n");
    CsvOptions last;  // default -1: last column
    Dataset d2 = load_csv(p, last);
    Batch b2 = d2.range(0, 2);
    QCOMPARE(b2.labels.ints()[0], 2);
    QCOMPARE(b2.features.data()[2], 2.5f);

    // Column 1 holds 1.5: not an integer label.
    CsvOptions middle;
    middle.label_column = 1;
    STRATA_EXPECT_ERROR(load_csv(p, middle), ErrorKind::BadInput, p + ":1", "column 2", "label must be a non-negative integer");
    CsvOptions from_end;
    from_end.label_column = -3;  // counts from the end: the first column
    STRATA_EXPECT_ERROR(load_csv(p, from_end), ErrorKind::BadInput, p + ":1", "column 1");
  }

  void csv_non_integer_label() {
    const std::string p = path("label-float.csv");
    write_text(p, "0.5,1\n0.25,1.5\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p + ":2", "column 2", "label");
    write_text(p, "0.5,-1\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p + ":1", "column 2");
  }

  void csv_non_numeric_cell() {
    const std::string p = path("bad-cell.csv");
    write_text(p, "f1,f2,f3,label\n1,2,3,0\n4,5,6,1\n7,oops,9,0\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p, ":4", "column 2", "oops");
    // An empty cell and a non-finite value are not numbers either.
    write_text(p, "1,2,0\n3,,1\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p + ":2", "column 2");
    write_text(p, "1,2,0\n3,nan,1\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p + ":2", "column 2");
  }

  void csv_wrong_column_count() {
    const std::string p = path("columns.csv");
    write_text(p, "1,2,0\n3,4,1\n5,6,7,1\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p + ":3", "expected 3 columns, got 4");
    write_text(p, "a,b,c\n1,2,0\n3,1\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p + ":3", "expected 3 columns, got 2");
  }

  void csv_other_problems() {
    STRATA_EXPECT_ERROR(load_csv(path("missing.csv"), CsvOptions{}), ErrorKind::BadInput, path("missing.csv"));
    const std::string p = path("other.csv");
    write_text(p, "a,b,label\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p, "no data rows");
    write_text(p, "");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p);
    write_text(p, "1\n2\n");
    STRATA_EXPECT_ERROR(load_csv(p, CsvOptions{}), ErrorKind::BadInput, p);
    write_text(p, "1,2,0\n");
    CsvOptions o;
    o.label_column = 5;
    STRATA_EXPECT_ERROR(load_csv(p, o), ErrorKind::BadInput, p, "label column");
  }

  void csv_standardize() {
    const std::string p = path("std.csv");
    write_text(p, "1,10,0\n3,10,1\n5,10,0\n7,10,1\n");
    Dataset d = load_csv(p, CsvOptions{});
    Dataset ref = d;
    d.standardize_from(ref);
    Batch b = d.range(0, 4);
    double mean = 0, sq = 0;
    for (int r = 0; r < 4; ++r) {
      mean += b.features.data()[r * 2];
      sq += double(b.features.data()[r * 2]) * b.features.data()[r * 2];
      QCOMPARE(b.features.data()[r * 2 + 1], 0.0f);  // constant column: centred, not divided by zero
    }
    QVERIFY(std::fabs(mean / 4) < 1e-6);
    QVERIFY(std::fabs(sq / 4 - 1.0) < 1e-5);
  }

  // ---- synthetic --------------------------------------------------------------

  void synthetic_determinism() {
    Dataset a = make_synthetic(300, 7, 4, 99), b = make_synthetic(300, 7, 4, 99), c = make_synthetic(300, 7, 4, 100);
    QCOMPARE(a.size(), int64_t{300});
    QCOMPARE(a.example_shape(), (Shape{7}));
    QCOMPARE(a.num_classes(), 4);
    Batch ba = a.range(0, 300), bb = b.range(0, 300), bc = c.range(0, 300);
    STRATA_COMPARE_OK(testutil::identical(ba.features.span(), bb.features.span(), "same seed, same features"));
    QVERIFY(std::equal(a.labels().begin(), a.labels().end(), b.labels().begin()));
    QVERIFY(!testutil::identical(ba.features.span(), bc.features.span()).empty());
    auto counts = a.class_counts();
    QCOMPARE(counts.size(), size_t(4));
    for (auto n : counts) QVERIFY2(n > 30, "every class is represented");
    STRATA_EXPECT_ERROR(make_synthetic(0, 3, 2, 1), ErrorKind::BadInput, "synthetic");
    STRATA_EXPECT_ERROR(make_synthetic(10, 3, 1, 1), ErrorKind::BadInput, "classes");
  }

  // ---- BatchPipeline ------------------------------------------------------------

  void pipeline_every_example_once_per_epoch() {
    auto ds = indexed_dataset(103);
    for (int prefetch : {0, 2}) {
      BatchPipeline p(ds, {.batch_size = 10, .shuffle = true, .seed = 5, .drop_remainder = false, .prefetch = prefetch});
      QCOMPARE(p.steps_per_epoch(), int64_t{11});
      for (int64_t epoch = 0; epoch < 3; ++epoch) {
        auto batches = epoch_batches(p, epoch);
        QCOMPARE(batches.size(), size_t(11));
        std::vector<int64_t> all;
        for (size_t i = 0; i < batches.size(); ++i) {
          QCOMPARE(batches[i].size(), size_t(i + 1 < batches.size() ? 10 : 3));
          all.insert(all.end(), batches[i].begin(), batches[i].end());
        }
        std::sort(all.begin(), all.end());
        std::vector<int64_t> want(103);
        std::iota(want.begin(), want.end(), 0);
        QCOMPARE(all, want);
        QVERIFY(!p.next().has_value());  // stays at the end
      }
    }
  }

  void pipeline_shuffle_seeded_and_per_epoch() {
    auto ds = indexed_dataset(200);
    PipelineOptions o{.batch_size = 16, .shuffle = true, .seed = 11, .drop_remainder = false, .prefetch = 2};
    BatchPipeline a(ds, o), b(ds, o);
    auto a0 = epoch_batches(a, 0), a1 = epoch_batches(a, 1), b0 = epoch_batches(b, 0), b1 = epoch_batches(b, 1);
    QVERIFY(!a0.empty());
    QCOMPARE(a0, b0);  // same seed, same epoch: same order
    QCOMPARE(a1, b1);
    QVERIFY(a0 != a1);  // a new order every epoch
    QCOMPARE(epoch_batches(a, 0), a0);  // an epoch can be replayed
    o.seed = 12;
    BatchPipeline c(ds, o);
    QVERIFY(epoch_batches(c, 0) != a0);
    // Shuffled means not the identity order.
    std::vector<int64_t> flat;
    for (auto& v : a0) flat.insert(flat.end(), v.begin(), v.end());
    QVERIFY(!std::is_sorted(flat.begin(), flat.end()));

    o.shuffle = false;
    BatchPipeline d(ds, o);
    std::vector<int64_t> seq;
    for (auto& v : epoch_batches(d, 3)) seq.insert(seq.end(), v.begin(), v.end());
    std::vector<int64_t> want(200);
    std::iota(want.begin(), want.end(), 0);
    QCOMPARE(seq, want);
  }

  void pipeline_drop_remainder() {
    auto ds = indexed_dataset(103);
    BatchPipeline p(ds, {.batch_size = 10, .shuffle = true, .seed = 1, .drop_remainder = true, .prefetch = 2});
    QCOMPARE(p.steps_per_epoch(), int64_t{10});
    auto batches = epoch_batches(p, 0);
    QCOMPARE(batches.size(), size_t(10));
    for (auto& b : batches) QCOMPARE(b.size(), size_t(10));
    BatchPipeline exact(indexed_dataset(100), {.batch_size = 10, .shuffle = false, .seed = 0, .drop_remainder = true, .prefetch = 0});
    QCOMPARE(exact.steps_per_epoch(), int64_t{10});
    BatchPipeline tiny(indexed_dataset(7), {.batch_size = 10, .shuffle = false, .seed = 0, .drop_remainder = true, .prefetch = 1});
    QCOMPARE(tiny.steps_per_epoch(), int64_t{0});
    QVERIFY(epoch_batches(tiny, 0).empty());
  }

  void pipeline_prefetch_identical() {
    auto ds = indexed_dataset(157);
    std::vector<std::vector<std::vector<int64_t>>> runs;
    for (int prefetch : {0, 1, 4}) {
      BatchPipeline p(ds, {.batch_size = 8, .shuffle = true, .seed = 77, .drop_remainder = false, .prefetch = prefetch});
      runs.push_back(epoch_batches(p, 2));
    }
    QVERIFY(!runs[0].empty());
    QCOMPARE(runs[1], runs[0]);
    QCOMPARE(runs[2], runs[0]);
  }

  void pipeline_resume_at_batch() {
    auto ds = indexed_dataset(95);
    for (int prefetch : {0, 2}) {
      BatchPipeline p(ds, {.batch_size = 10, .shuffle = true, .seed = 3, .drop_remainder = false, .prefetch = prefetch});
      auto full = epoch_batches(p, 4);
      for (int64_t k : {0, 1, 5, 9, 10}) {
        auto tail = epoch_batches(p, 4, k);
        QCOMPARE(tail, std::vector<std::vector<int64_t>>(full.begin() + k, full.end()));
      }
      // Restarting in the middle of an epoch under way is allowed.
      p.begin_epoch(4);
      QVERIFY(p.next().has_value());
      auto again = epoch_batches(p, 4, 3);
      QCOMPARE(again.size(), full.size() - 3);
    }
  }

  void host_replicas_gather_their_own_rows() {
    // gather_in_replicas: next() hands each replica only the indices of its
    // rows, and its to_features gathers them (in the replica's own thread in
    // training), to the same bits and labels as the prefetch thread's batch
    // split among them. Images standardised, and float features.
    const Dataset images = small_images();
    const std::vector<Device> host{Device{DeviceKind::Cpu, 0}, Device{DeviceKind::Cpu, 1}};
    // 23 examples: batches of 5 and a last one of 3 (2 + 1 rows); 21: a last
    // batch of 1, so replica 1 gets no rows at all.
    for (const auto& ds : {std::make_shared<const Dataset>(images), std::shared_ptr<const Dataset>(indexed_dataset(23)),
                           std::make_shared<const Dataset>(images.subset(0, 21))}) {
      const PipelineOptions po{.batch_size = 5, .shuffle = true, .seed = 9, .drop_remainder = false, .prefetch = 2};
      DistributedDataset want(std::make_shared<BatchPipeline>(ds, po), 2, 0, -1, host);
      DistributedDataset got(std::make_shared<BatchPipeline>(ds, po), 2, 0, -1, host);
      got.gather_in_replicas(true);
      want.begin_epoch(1);
      got.begin_epoch(1);
      int batches = 0;
      while (auto w = want.next()) {
        // Mid-epoch switches go on from the next batch not handed out.
        if (batches == 2) got.gather_in_replicas(false);
        if (batches == 3) got.gather_in_replicas(true);
        auto g = got.next();
        QVERIFY(g.has_value());
        QCOMPARE(g->num_replicas(), 2);
        for (int r = 0; r < 2; ++r) {
          const Batch& part = (*g)[r];
          QCOMPARE(part.pending, batches != 2);
          QCOMPARE(part.size(), (*w)[r].size());
          QCOMPARE(part.global_batch_size, (*w)[r].global_batch_size);
          const Batch ready = got.to_features(part, static_cast<size_t>(r));
          QVERIFY(!ready.pending);
          QCOMPARE(ready.features.shape(), (*w)[r].features.shape());
          QCOMPARE(ready.features.values(), (*w)[r].features.values());
          const auto labels_of = [](const Batch& b) {
            return std::vector<int32_t>(b.labels.ints(), b.labels.ints() + b.size());
          };
          QCOMPARE(labels_of(ready), labels_of((*w)[r]));
          QCOMPARE(ready.global_batch_size, (*w)[r].global_batch_size);
        }
        ++batches;
      }
      QCOMPARE(batches, 5);
      QVERIFY(!got.next().has_value());
    }
    // Replicas off the host are not affected: they convert on their devices.
    auto ds = std::make_shared<const Dataset>(images);
    DistributedDataset sim(std::make_shared<BatchPipeline>(ds, PipelineOptions{.batch_size = 4}), 2, 0, -1,
                           {Device{DeviceKind::Sim, 0}, Device{DeviceKind::Sim, 1}});
    sim.gather_in_replicas(true);
    sim.begin_epoch(0);
    const auto parts = sim.next();
    QVERIFY(parts.has_value() && !(*parts)[0].pending);
  }

  // Accelerator replicas keep an image training set on their devices and
  // gather each batch there from its row numbers: the same bits and labels,
  // batch by batch, as gathering on the host and copying the images
  // (STRATA_DEVICE_DATA=0), with a partial last batch, a replica without
  // rows, and two replicas sharing a device (one copy of the set).
  void accelerators_gather_from_the_set_kept_on_their_devices() {
    const Dataset images = small_images();
    const Device sim0{DeviceKind::Sim, 0}, sim1{DeviceKind::Sim, 1};
    for (const auto& devices : {std::vector<Device>{sim0, sim1}, std::vector<Device>{sim0, sim0}})
      for (const auto& ds :
           {std::make_shared<const Dataset>(images), std::make_shared<const Dataset>(images.subset(0, 21))}) {
        const PipelineOptions po{.batch_size = 5, .shuffle = true, .seed = 9, .drop_remainder = false, .prefetch = 2};
        qputenv("STRATA_DEVICE_DATA", "0");
        DistributedDataset host_gather(std::make_shared<BatchPipeline>(ds, po), 2, 0, -1, devices);
        qunsetenv("STRATA_DEVICE_DATA");
        DistributedDataset device_gather(std::make_shared<BatchPipeline>(ds, po), 2, 0, -1, devices);
        host_gather.begin_epoch(1);
        device_gather.begin_epoch(1);
        std::vector<std::vector<std::pair<std::vector<float>, std::vector<int32_t>>>> want;
        while (auto w = host_gather.next()) {
          want.emplace_back();
          for (int r = 0; r < 2; ++r) {
            const Tensor l = (*w)[r].labels.to(Device{});
            want.back().emplace_back((*w)[r].features.to(Device{}).values(),
                                     std::vector<int32_t>(l.ints(), l.ints() + (*w)[r].size()));
          }
        }
        QCOMPARE(want.size(), size_t{5});
        // After the set's first upload only row numbers cross: 4 bytes an example.
        DeviceCounters& sim0_counters = device_memory(sim0).counters();
        int64_t h2d_after_first = 0, rows_after_first = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          const int64_t before = sim0_counters.h2d_bytes;
          auto g = device_gather.next();
          QVERIFY(g.has_value());
          for (int r = 0; r < 2; ++r) {
            const Batch& got = (*g)[r];
            QVERIFY(!got.pending);
            QCOMPARE(got.features.device(), devices[static_cast<size_t>(r)]);
            QCOMPARE(got.features.to(Device{}).values(), want[i][static_cast<size_t>(r)].first);
            const Tensor l = got.labels.to(Device{});
            QCOMPARE(std::vector<int32_t>(l.ints(), l.ints() + got.size()), want[i][static_cast<size_t>(r)].second);
            if (i > 0 && devices[static_cast<size_t>(r)] == sim0) rows_after_first += got.size();
          }
          if (i > 0) h2d_after_first += sim0_counters.h2d_bytes - before;
        }
        QCOMPARE(h2d_after_first, 4 * rows_after_first);
        QVERIFY(!device_gather.next().has_value());
      }
  }

  void pipeline_bad_batch_size() {
    STRATA_EXPECT_ERROR(BatchPipeline(indexed_dataset(5), {.batch_size = 0}), ErrorKind::BadInput, "batch size");
  }

  // ---- validation split -----------------------------------------------------------

  void validation_split() {
    auto ds = indexed_dataset(103);
    auto [train, val] = ds->split(0.2);
    QCOMPARE(val.size(), int64_t{20});  // floor(103 * 0.2)
    QCOMPARE(train.size(), int64_t{83});
    // Keras takes the last fraction, in order.
    QCOMPARE(train.range(0, 1).features.data()[0], 0.0f);
    QCOMPARE(val.range(0, 1).features.data()[0], 83.0f);
    QCOMPARE(val.range(19, 20).features.data()[0], 102.0f);
    QCOMPARE(val.labels()[0], 83 % 3);
    auto [all, none] = ds->split(0.0);
    QCOMPARE(all.size(), int64_t{103});
    QCOMPARE(none.size(), int64_t{0});
    STRATA_EXPECT_ERROR(ds->split(1.0), ErrorKind::BadInput, "validation_split");
    STRATA_EXPECT_ERROR(ds->split(-0.1), ErrorKind::BadInput, "validation_split");
  }

  // ---- Fashion-MNIST ------------------------------------------------------------

  void fashion_mnist_missing_dir() {
    const std::string dir = path("no-fashion-here");
    STRATA_EXPECT_ERROR(load_fashion_mnist(dir), ErrorKind::BadInput, dir, "not found", "dataset-fashion-mnist");
  }

  void fashion_mnist_real() {
    const std::string dir = kFashionMnistDefaultDir;
    for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
      if (!std::filesystem::exists(dir + "/" + f + ".gz") && !std::filesystem::exists(dir + "/" + f))
        QSKIP("Fashion-MNIST is not installed (apt install dataset-fashion-mnist)");
    DatasetSplits s = load_fashion_mnist(dir);
    QCOMPARE(s.train.size(), int64_t{60000});
    QVERIFY(s.test != nullptr);
    QCOMPARE(s.test->size(), int64_t{10000});
    QCOMPARE(s.train.example_shape(), (Shape{28, 28, 1}));
    QCOMPARE(s.test->example_shape(), (Shape{28, 28, 1}));
    QCOMPARE(s.train.num_classes(), 10);
    for (auto n : s.train.class_counts()) QCOMPARE(n, int64_t{6000});
    for (auto n : s.test->class_counts()) QCOMPARE(n, int64_t{1000});
    Batch b = s.train.range(0, 2);
    QCOMPARE(b.features.shape(), (Shape{2, 28, 28, 1}));
    float mx = 0;
    for (float v : b.features.span()) {
      QVERIFY(v >= 0.0f && v <= 1.0f);
      mx = std::max(mx, v);
    }
    QVERIFY(mx > 0.5f);
    QCOMPARE(QString(fashion_mnist_class_name(9)), QString("Ankle boot"));
  }
};

QTEST_GUILESS_MAIN(TestData)
#include "test_data.moc"
