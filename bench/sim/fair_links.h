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
#include <utility>
#include <vector>

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
  // by `token`; returns what AdvanceTo(now) would, before it joined.
  std::vector<Done> Submit(double now, int from, int to, double bytes, uint64_t token);

  // When the next message is through if nothing else is sent; +inf if
  // none is on its way.
  double NextEnd() const;

  // The current rate of the connection from -> to (0 if idle); for tests.
  double RateOf(int from, int to) const;

 private:
  struct Message {
    double left;  // bytes
    uint64_t token;
  };
  struct Connection {
    int from, to;
    std::deque<Message> queue;  // the front one is moving
    double rate = 0;
  };
  void ShareOut();  // the max-min fair rates of the connections with a message

  std::vector<double> capacity_;
  double flow_cap_;
  double now_ = 0;
  std::vector<Connection> connections_;
  std::map<std::pair<int, int>, size_t> index_;
  std::vector<size_t> busy_;  // connections with a message
};

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_FAIR_LINKS_H_
