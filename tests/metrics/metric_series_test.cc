#include "server/metrics/metric_series.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

// Counts this binary's operator new calls while `counting` is set (on this
// thread only), so a test can tell that a path does not allocate.
namespace {
thread_local bool counting = false;
std::atomic<int64_t> news{0};
}  // namespace

void* operator new(std::size_t n) {
  if (counting) news.fetch_add(1);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace linalgd::metrics {
namespace {

std::string Render(const prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

TEST(SeriesTest, SameValuesFindTheSameSeriesAndValueListsNeverCollide) {
  prometheus::Registry registry;
  Series<prometheus::Counter> series;
  ASSERT_TRUE(series.Register(registry, "test_total", "help", {"x", "y"}).ok());
  prometheus::Counter& ab = series.With({"a|b", "c"});
  EXPECT_EQ(&ab, &series.With({"a|b", "c"}));
  prometheus::Counter& other = series.With({"a", "b|c"});  // the same joined text
  EXPECT_NE(&ab, &other);
  EXPECT_NE(&ab, &series.With({"", "a|bc"}));
  ab.Increment(2);
  other.Increment(3);
  const std::string text = Render(registry);
  EXPECT_TRUE(absl::StrContains(text, "test_total{x=\"a|b\",y=\"c\"} 2")) << text;
  EXPECT_TRUE(absl::StrContains(text, "test_total{x=\"a\",y=\"b|c\"} 3")) << text;
}

TEST(SeriesTest, AnExistingSeriesIsFoundWithoutAllocating) {
  prometheus::Registry registry;
  Series<prometheus::Histogram> series;
  ASSERT_TRUE(series
                  .Register(registry, "test_seconds", "help", {"op", "backend", "tenant"},
                            {0.001, 0.01, 0.1})
                  .ok());
  // Values beyond the small-string size, as real label values are.
  const std::string op = "MatmulWithALongName", backend = "gpu:0-with-a-long-name";
  prometheus::Histogram& first = series.With({op, backend, "default-tenant-name"});
  news = 0;
  counting = true;
  prometheus::Histogram& again = series.With({op, backend, "default-tenant-name"});
  counting = false;
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(news.load(), 0);
}

TEST(SeriesTest, ValuesLongerThanTheKeyBufferStillFindTheirOwnSeries) {
  prometheus::Registry registry;
  Series<prometheus::Gauge> series;
  ASSERT_TRUE(series.Register(registry, "test_gauge", "help", {"tenant", "op"}).ok());
  // 300 and 301 bytes: keys past the 256 bytes kept on the stack.
  const std::string long_a(300, 'a'), long_b = long_a + "b";
  prometheus::Gauge& a = series.With({long_a, "x"});
  prometheus::Gauge& b = series.With({long_b, "x"});
  EXPECT_NE(&a, &b);
  EXPECT_EQ(&a, &series.With({long_a, "x"}));
  EXPECT_EQ(&b, &series.With({long_b, "x"}));
  EXPECT_NE(&a, &series.With({long_a, ""}));
  // Right at the edge: 252 bytes of value and its 4-byte length fill 256.
  const std::string edge(248, 'e');
  prometheus::Gauge& e = series.With({edge, ""});
  EXPECT_EQ(&e, &series.With({edge, ""}));
  EXPECT_NE(&e, &series.With({edge + "e", ""}));
  a.Set(1);
  b.Set(2);
  const std::string text = Render(registry);
  // (the text names labels in alphabetical order)
  EXPECT_TRUE(absl::StrContains(text, "{op=\"x\",tenant=\"" + long_a + "\"} 1")) << text;
  EXPECT_TRUE(absl::StrContains(text, "{op=\"x\",tenant=\"" + long_b + "\"} 2")) << text;
}

}  // namespace
}  // namespace linalgd::metrics
