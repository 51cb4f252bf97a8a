// timeline.svg: a Gantt chart of one iteration, one row per worker shown
// (ranks.hpp), rows grouped by DC, with a time axis in ms and a legend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "record/record_internal.hpp"
#include "report/svg.hpp"
#include "wanlab/harness/model/served_model.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/report/ranks.hpp"
#include "wanlab/harness/report/timeline.hpp"

namespace wanlab::harness {
namespace {

constexpr double kWidth = 1280;
constexpr double kLabelX = 14;
constexpr double kChartX = 250;
constexpr double kChartWidth = 920;
constexpr double kUtilizationX = kChartX + kChartWidth + 16;
constexpr double kTitleHeight = 84;
constexpr double kGroupHeaderHeight = 24;
constexpr double kRowHeight = 26;
constexpr double kBarHeight = 15;
constexpr double kStripHeight = 5;
constexpr int kTargetTicks = 10;

struct Colour {
  const char* fill;
  const char* label;
};

constexpr Colour kForward{"#4e79a7", "forward (F = microbatch number)"};
constexpr Colour kBackward{"#f28e2b", "backward (B = microbatch number)"};
constexpr Colour kWaiting{"#e15759", "waiting for a message (recv)"};
constexpr Colour kAllreduce{"#b07aa1", "all-reduce (and waiting for the other replicas)"};
constexpr Colour kIdle{"#e6e6e6", "idle (pipeline bubble)"};
constexpr Colour kWanMessage{"#2f8f46", "message in flight across the WAN (thin line)"};
constexpr Colour kDcMessage{"#9fd59a", "message in flight inside a DC (thin line)"};
constexpr Colour kPrefill{"#edc948", "prefill of inference requests (BubbleTea)"};

using detail::xml_escape;

// 1, 2 or 5 times a power of ten, giving about kTargetTicks ticks.
double tick_step_ms(double span_ms) {
  return detail::tick_step(std::max(span_ms, 1e-6), kTargetTicks, {1.0, 2.0, 5.0, 10.0});
}

std::string format_ms(double ms) { return ms == std::floor(ms) ? fmt::format("{:.0f}", ms) : fmt::format("{:g}", ms); }

class Chart {
 public:
  Chart(const RunRecord& record, int iteration, const RankSelection& ranks)
      : record_(record),
        plan_(record.plan),
        iteration_(iteration),
        ranks_(ranks),
        span_(detail::iteration_span(record, iteration)) {
    span_ms_ = std::max(1e-6, static_cast<double>(span_.end_ns - span_.start_ns) / 1e6);
    step_ms_ = tick_step_ms(span_ms_);
    axis_ms_ = std::ceil(span_ms_ / step_ms_ - 1e-9) * step_ms_;
    summaries_ = summarize(record);
    // One pass over the record, not one per row: a run may hold millions of events.
    events_of_.resize(plan_.workers.size());
    for (const Event& event : record.events) {
      if (event.iteration == iteration && event.worker >= 0 &&
          static_cast<std::size_t>(event.worker) < events_of_.size()) {
        events_of_[static_cast<std::size_t>(event.worker)].push_back(&event);
      }
    }
    spans_of_.resize(plan_.workers.size());
    if (record.prefill) {
      for (const PrefillSpan& span : record.prefill->spans) {
        if (span.end_ns > span_.start_ns && span.start_ns < span_.end_ns && span.worker >= 0 &&
            static_cast<std::size_t>(span.worker) < spans_of_.size())
          spans_of_[static_cast<std::size_t>(span.worker)].push_back(&span);
      }
    }
  }

  std::string render() {
    std::vector<std::vector<int>> groups = dc_groups();
    double rows_height = 0;
    for (const auto& group : groups) rows_height += kGroupHeaderHeight + kRowHeight * static_cast<double>(drawn(group));
    double axis_y = kTitleHeight + rows_height + 6;
    double legend_y = axis_y + 52;
    double height = legend_y + 3 * 22 + 16;
    // Appended to in place: a copy of a chart of millions of boxes would double its peak.
    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
        kWidth, height);
    out += title();
    out += grid(kTitleHeight - 6, axis_y);
    double y = kTitleHeight;
    for (const auto& group : groups) y = draw_group(group, y, out);
    out += axis(axis_y);
    out += legend(legend_y);
    out += "</svg>\n";
    return out;
  }

 private:
  double x_of(std::int64_t ns) const {
    double ms = static_cast<double>(ns - span_.start_ns) / 1e6;
    return kChartX + std::clamp(ms / axis_ms_, 0.0, 1.0) * kChartWidth;
  }

  const IterationSummary* summary() const {
    for (const IterationSummary& summary : summaries_) {
      if (summary.index == iteration_) return &summary;
    }
    return nullptr;
  }

  std::size_t drawn(const std::vector<int>& group) const {
    return static_cast<std::size_t>(
        std::count_if(group.begin(), group.end(), [&](int id) { return ranks_.shows(id); }));
  }

  // Workers by DC, DCs in the order the pipeline reaches them (every worker;
  // rows are drawn for those ranks_ shows).
  std::vector<std::vector<int>> dc_groups() const {
    std::vector<std::vector<int>> groups;
    int current_dc = -1;
    for (int id : detail::display_order(plan_)) {
      int dc = plan_.workers[static_cast<std::size_t>(id)].worker.dc;
      if (groups.empty() || dc != current_dc) groups.emplace_back();
      groups.back().push_back(id);
      current_dc = dc;
    }
    return groups;
  }

  std::string title() const {
    const Experiment& experiment = plan_.experiment;
    std::string placement = experiment.placement == Placement::explicit_list
                                ? fmt::format("placement [{}]", fmt::join(experiment.placement_dcs, ", "))
                                : fmt::format("{} placement", to_string(experiment.placement));
    std::string headline = fmt::format("{}: {} schedule, {}, {} stream{} per WAN transfer, temporal sharing {}",
                                       experiment.name, to_string(experiment.schedule), placement, experiment.streams,
                                       experiment.streams == 1 ? "" : "s", experiment.temporal_sharing ? "on" : "off");
    const int steps = steps_per_iteration(experiment);
    const std::string per = steps == 1 ? "per iteration" : fmt::format("per step, {} inner steps an iteration", steps);
    std::string details =
        fmt::format("pp {} x dp {} x tp {}, {} microbatches {}{}; runtime: {}", experiment.parallel.pp,
                    experiment.parallel.dp, experiment.parallel.tp, experiment.model.microbatches, per,
                    experiment.scale == 1 ? "" : fmt::format(", scale {:g}", experiment.scale), record_.runtime);
    if (const IterationSummary* figures = summary()) {
      details += fmt::format(
          " — iteration {}: {:.1f} ms, GPUs busy {:.1f}% (bubble {:.1f}%), {:.1f} ms waiting on the network per GPU",
          iteration_, figures->time_s * 1e3, figures->mean_gpu_utilization * 100, figures->bubble_fraction * 100,
          figures->network_blocked_s * 1e3);
    }
    // Rows for some workers only: say which, and that the DCs' figures cover all.
    const std::string drawn_note =
        ranks_.all() ? ""
                     : fmt::format(
                           "<text x=\"{}\" y=\"66\" font-size=\"11.5\" fill=\"#555\">rows: {}; each DC's "
                           "line gives GPU busy over all its workers</text>\n",
                           kLabelX, xml_escape(ranks_.description));
    return drawn_note +
           fmt::format(
               "<text x=\"{}\" y=\"26\" font-size=\"17\" font-weight=\"bold\">{}</text>\n"
               "<text x=\"{}\" y=\"48\" font-size=\"12.5\" fill=\"#333\">{}</text>\n"
               "<text x=\"{}\" y=\"{}\" font-size=\"11\" font-weight=\"bold\" fill=\"#555\" text-anchor=\"middle\">GPU "
               "busy</text>\n",
               kLabelX, xml_escape(headline), kLabelX, xml_escape(details), kUtilizationX + 26, kTitleHeight - 10);
  }

  std::string grid(double top, double bottom) const {
    std::string lines;
    for (double ms = 0; ms <= axis_ms_ + step_ms_ / 2; ms += step_ms_) {
      double x = kChartX + ms / axis_ms_ * kChartWidth;
      lines += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#d0d0d0\" "
          "stroke-width=\"1\"/>\n",
          x, top, bottom);
    }
    return lines;
  }

  double draw_group(const std::vector<int>& group, double y, std::string& out) const {
    const Worker& first = plan_.workers[static_cast<std::size_t>(group.front())].worker;
    out += fmt::format("<rect x=\"0\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"#f3f3f3\"/>\n", y, kWidth,
                       kGroupHeaderHeight - 2);
    out += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"14\" font-weight=\"bold\">DC {}</text>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#555\">{}</text>\n",
        kLabelX, y + 16, xml_escape(first.dc_name), kLabelX + 110, y + 16, xml_escape(group_line(group)));
    y += kGroupHeaderHeight;
    for (int id : group) {
      if (!ranks_.shows(id)) continue;
      draw_row(id, y, out);
      y += kRowHeight;
    }
    return y;
  }

  // "2 workers on east-0, east-1", or where rows are left out "624 workers
  // on 8 hosts (east-0, east-1, east-2, ...), 2 drawn; GPU busy 41-43%".
  std::string group_line(const std::vector<int>& group) const {
    constexpr std::size_t kHostsNamed = 3;
    std::vector<std::string> hosts;
    for (int id : group) {
      const std::string& host = plan_.workers[static_cast<std::size_t>(id)].worker.host;
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    }
    std::string on = hosts.size() <= kHostsNamed
                         ? fmt::format("{}", fmt::join(hosts, ", "))
                         : fmt::format("{} hosts ({}, ...)", hosts.size(),
                                       fmt::join(hosts.begin(), hosts.begin() + kHostsNamed, ", "));
    std::string line = fmt::format("{} worker{} on {}", group.size(), group.size() == 1 ? "" : "s", on);
    const std::size_t rows = drawn(group);
    if (rows == group.size()) return line;
    line += fmt::format(", {} drawn", rows);
    const IterationSummary* figures = summary();
    if (figures == nullptr) return line;
    double least = 1, most = 0;
    for (int id : group) {
      if (static_cast<std::size_t>(id) >= figures->gpu_utilization.size()) continue;
      least = std::min(least, figures->gpu_utilization[static_cast<std::size_t>(id)]);
      most = std::max(most, figures->gpu_utilization[static_cast<std::size_t>(id)]);
    }
    if (most < least) return line;
    const std::string low = fmt::format("{:.0f}", 100 * least), high = fmt::format("{:.0f}", 100 * most);
    return line + fmt::format("; GPU busy {}% over all {}", low == high ? low : low + "-" + high, group.size());
  }

  void draw_row(int id, double y, std::string& out) const {
    const Worker& worker = plan_.workers[static_cast<std::size_t>(id)].worker;
    double bar_y = y + 3;
    out += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\">stage {} · replica {}</text>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"10.5\" fill=\"#666\">{}</text>\n",
        kLabelX + 10, bar_y + 12, worker.stage, worker.replica, kLabelX + 140, bar_y + 12, xml_escape(worker.host));
    out += box(kChartX, bar_y, x_of(span_.end_ns) - kChartX, kBarHeight, kIdle.fill, "idle");
    for (const Event* event : events_of_[static_cast<std::size_t>(id)]) draw_event(*event, bar_y, out);
    std::int64_t prefill_ns = 0;
    for (const PrefillSpan* span : spans_of_[static_cast<std::size_t>(id)]) {
      draw_prefill(*span, bar_y, out);
      prefill_ns += std::min(span->end_ns, span_.end_ns) - std::max(span->start_ns, span_.start_ns);
    }
    if (const IterationSummary* figures = summary();
        figures != nullptr && static_cast<std::size_t>(id) < figures->gpu_utilization.size()) {
      const double training = figures->gpu_utilization[static_cast<std::size_t>(id)] * 100;
      // With prefill: training's share, then prefill's ("42+49%").
      const std::string busy =
          record_.prefill
              ? fmt::format("{:.0f}+{:.0f}%", training,
                            100 * static_cast<double>(prefill_ns) / static_cast<double>(span_.end_ns - span_.start_ns))
              : fmt::format("{:.0f}%", training);
      out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                         kUtilizationX + 26, bar_y + 12, busy);
    }
  }

  void draw_prefill(const PrefillSpan& span, double bar_y, std::string& out) const {
    const double x = x_of(span.start_ns);
    const double ms = static_cast<double>(span.end_ns - span.start_ns) / 1e6;
    const double from_ms = static_cast<double>(span.start_ns - span_.start_ns) / 1e6;
    out += box(x, bar_y, x_of(span.end_ns) - x, kBarHeight, kPrefill.fill,
               fmt::format("prefill batch {} chunk {} ({} tokens, layers {}-{}): {:.2f} ms to {:.2f} ms ({:.2f} ms)",
                           span.batch, span.chunk, span.tokens, span.first_layer, span.end_layer - 1, from_ms,
                           from_ms + ms, ms));
  }

  void draw_event(const Event& event, double bar_y, std::string& out) const {
    double x = x_of(event.start_ns);
    double width = x_of(event.end_ns) - x;
    double ms = static_cast<double>(event.end_ns - event.start_ns) / 1e6;
    double from_ms = static_cast<double>(event.start_ns - span_.start_ns) / 1e6;
    std::string when = fmt::format("{:.2f} ms to {:.2f} ms ({:.2f} ms)", from_ms, from_ms + ms, ms);
    switch (event.kind) {
      case OpKind::forward:
      case OpKind::backward: {
        bool forward = event.kind == OpKind::forward;
        std::string name = fmt::format("{}{}", forward ? 'F' : 'B', event.microbatch);
        out += box(x, bar_y, width, kBarHeight, forward ? kForward.fill : kBackward.fill,
                   fmt::format("{} {}", name, when));
        if (width >= 7.0 * static_cast<double>(name.size()) + 3) {
          out += fmt::format(
              "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"white\" "
              "text-anchor=\"middle\">{}</text>\n",
              x + width / 2, bar_y + 11.5, name);
        }
        break;
      }
      case OpKind::recv:
        if (event.end_ns > event.start_ns) {
          out += box(x, bar_y, width, kBarHeight, kWaiting.fill,
                     fmt::format("waiting for microbatch {} from worker {}: {}", event.microbatch, event.peer, when));
        }
        break;
      case OpKind::allreduce:
        if (detail::overlapped(plan_, event)) {  // beside the compute: a strip under the bar
          out += box(
              x, bar_y + kBarHeight + 1.5, std::max(width, 1.0), kStripHeight, kAllreduce.fill,
              fmt::format("{} ({} bytes): {}", allreduce_name(plan_.experiment, event.microbatch), event.bytes, when),
              0.85);
        } else {
          out += box(x, bar_y, width, kBarHeight, kAllreduce.fill,
                     fmt::format("{} {}", allreduce_name(plan_.experiment, event.microbatch), when));
        }
        break;
      case OpKind::allreduce_wait:
        if (event.end_ns > event.start_ns) {
          out += box(x, bar_y, width, kBarHeight, kWaiting.fill,
                     fmt::format("waiting for {}: {}", allreduce_name(plan_.experiment, event.microbatch), when));
        }
        break;
      case OpKind::send:
        if (event.end_ns > event.start_ns) {
          out += box(
              x, bar_y + kBarHeight + 1.5, std::max(width, 1.0), kStripHeight,
              event.cross_dc ? kWanMessage.fill : kDcMessage.fill,
              fmt::format("microbatch {} to worker {} ({} bytes): {}", event.microbatch, event.peer, event.bytes, when),
              0.85);
        }
        break;
    }
  }

  static std::string box(double x, double y, double width, double height, const char* fill, std::string_view tip,
                         double opacity = 1.0) {
    std::string opacity_attribute = opacity < 1 ? fmt::format(" fill-opacity=\"{}\"", opacity) : "";
    return fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"{}>"
        "<title>{}</title></rect>\n",
        x, y, std::max(width, 0.5), height, fill, opacity_attribute, xml_escape(tip));
  }

  std::string axis(double y) const {
    std::string out = fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", kChartX,
                                  y, kChartX + kChartWidth, y);
    for (double ms = 0; ms <= axis_ms_ + step_ms_ / 2; ms += step_ms_) {
      double x = kChartX + ms / axis_ms_ * kChartWidth;
      out += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>"
          "<text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"11\" text-anchor=\"middle\">{4}</text>\n",
          x, y, y + 5, y + 18, format_ms(ms));
    }
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">time since the "
        "iteration started (ms)</text>\n",
        kChartX + kChartWidth / 2, y + 36);
    return out;
  }

  std::string legend(double y) const {
    std::vector<Colour> entries{kForward, kBackward, kWaiting, kAllreduce, kIdle, kWanMessage, kDcMessage};
    if (record_.prefill) entries.insert(entries.begin() + 5, kPrefill);
    std::string out = fmt::format(
        "<g class=\"legend\"><text x=\"{}\" y=\"{:.1f}\" font-size=\"12\" "
        "font-weight=\"bold\">Legend</text>\n",
        kLabelX, y + 12);
    double column_width = 330;
    int index = 0;
    for (const Colour& entry : entries) {
      double x = kChartX + column_width * (index % 3);
      double row_y = y + 22 * (index / 3);
      bool thin = entry.fill == kWanMessage.fill || entry.fill == kDcMessage.fill;
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"{}\" fill=\"{}\"/>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n",
          x, row_y + (thin ? 6 : 2), thin ? kStripHeight : 14.0, entry.fill, x + 26, row_y + 13,
          xml_escape(entry.label));
      ++index;
    }
    return out + "</g>\n";
  }

  const RunRecord& record_;
  const Plan& plan_;
  int iteration_;
  const RankSelection& ranks_;
  detail::IterationSpan span_;
  double span_ms_ = 0;
  double step_ms_ = 0;
  double axis_ms_ = 0;
  std::vector<IterationSummary> summaries_;
  std::vector<std::vector<const Event*>> events_of_;       // this iteration's, by worker, in record order
  std::vector<std::vector<const PrefillSpan*>> spans_of_;  // prefill overlapping this iteration, by worker
};

}  // namespace

std::string timeline_svg(const RunRecord& record, int iteration, const RankSelection& ranks) {
  if (iteration < 0 || iteration >= detail::iteration_count(record)) {
    throw std::out_of_range(
        fmt::format("timeline: no iteration {} (the run has {})", iteration, detail::iteration_count(record)));
  }
  return Chart(record, iteration, ranks).render();
}

std::string timeline_svg(const RunRecord& record, int iteration) {
  return timeline_svg(record, iteration, all_ranks(record.plan));
}

void write_timeline_svg(const RunRecord& record, int iteration, const RankSelection& ranks,
                        const base::OutputDir& dir) {
  dir.write("timeline.svg", timeline_svg(record, iteration, ranks));
}

}  // namespace wanlab::harness
