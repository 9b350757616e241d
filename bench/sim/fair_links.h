// Messages through NICs that share their bandwidth the way TCP flows do,
// for the iteration model: a message goes from a sending link (a NIC's
// transmit side) to a receiving one; the messages between one pair of
// links go one after another (one connection, in order), and the head
// messages of all connections share the links max-min fairly (progressive
// filling), each also at most `flow_cap` bytes/s (what one connection
// gets on an otherwise idle link: a single UCX TCP endpoint stays below
// what several fill). Completions come back in time order with the time
// they happened; latency is the caller's.
#ifndef LEEWAY_BENCH_SIM_FAIR_LINKS_H_
#define LEEWAY_BENCH_SIM_FAIR_LINKS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leeway {
namespace sim {

class FairLinks {
 public:
  struct Done {
    double t;
    uint64_t token;
  };

  // `capacity`: bytes/s of each link; `flow_cap`: bytes/s of one
  // connection, 0 for no cap. Capacities must be positive.
  FairLinks(std::vector<double> capacity, double flow_cap);

  // Advances to `now` (never back) and returns the messages through by
  // then.
  std::vector<Done> AdvanceTo(double now);

  // Sends `bytes` from link `from` to link `to` at `now`, known on arrival
  // by `token`; returns what AdvanceTo(now) would, before it joined. While
  // it moves, its connection's share is `weight` times that of a weight-1
  // one on the same full link (TCP flows are fair only on average).
  std::vector<Done> Submit(double now, int from, int to, double bytes, uint64_t token,
                           double weight = 1);

  // When the next message is through if nothing else is sent; +inf if
  // none is on its way.
  double NextEnd() const;

  // The current rate of the connection from -> to (0 if idle); for tests.
  double RateOf(int from, int to) const;

 private:
  struct Message {
    double left;  // bytes
    uint64_t token;
    double weight;
  };
  struct Connection {
    int from, to;
    std::deque<Message> queue;  // the front one is moving
    double rate = 0;
  };
  void ShareOut();  // the max-min fair rates of the connections with a message
  double Weight(size_t c) const { return connections_[c].queue.front().weight; }

  std::vector<double> capacity_;
  double flow_cap_;
  double now_ = 0;
  std::vector<Connection> connections_;
  std::map<std::pair<int, int>, size_t> index_;
  std::vector<size_t> busy_;  // connections with a message
};

// How unequal TCP's shares are, by message size: points (bytes, spread)
// where a message's weight is uniform in 1 +- spread; between points the
// spread is interpolated in log(bytes), beyond them held (small messages
// on a shaped link go nearly first come, first served: a wide spread;
// long flows even out: a narrow one). No points: every weight 1.
struct Unfairness {
  std::vector<std::pair<double, double>> points;  // by bytes, ascending
  double SpreadAt(double bytes) const;
  std::string ToString() const;  // "1 MiB +-0.95, 4 MiB +-0.66"
};

// How far apart `flows` equal messages that start together into one link
// finish when each moves at a weight uniform in 1 +- `weight_spread`: the
// mean over `trials` seeded draws of (first through) / (last through).
// 1 with no spread; what bench/netlab/flow_spread.sh measures of real TCP
// flows, so that a spread can be fitted to it.
double MeanFirstToLast(int flows, double weight_spread, int trials);

// Unfairness from measurements "BYTES:RATIO,..." (sizes ascending, each
// RATIO in (0, 1] the mean first/last of four equal flows of BYTES): per
// size, the spread under which MeanFirstToLast(4, ...) matches it, at most
// 0.95 (weights stay positive). Empty text: no unfairness.
absl::StatusOr<Unfairness> UnfairnessFromSpreads(absl::string_view text);

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_FAIR_LINKS_H_
