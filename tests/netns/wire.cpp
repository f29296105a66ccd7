// strata-test-wire: the network link between two test hosts (network
// namespaces), emulated in user space with delay, loss and a cut.
//
//   strata-test-wire NS_A DEV_A NS_B DEV_B [--delay-ms D] [--loss P] [--seed S]
//
// Why not `tc netem`: the kernels our machines and CI run on are built without
// the netem queueing discipline ("Specified qdisc kind is unknown"), so the
// link itself is a program. Each host gets a persistent TUN device (made by
// tests/netns/hosts.sh); this program attaches to both, reads every IP packet
// one host sends and writes it into the other host's device after D ms,
// dropping each with probability P. TUN devices carry whole, checksummed IP
// packets, so nothing depends on the offload settings of a veth pair.
//
// Signals: SIGUSR1 cuts the link (every packet dropped, the devices stay up,
// as when a cable beyond the switch is pulled), SIGUSR2 mends it, SIGTERM or
// SIGINT ends the program. It prints "ready" once both devices are attached.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <time.h>
#include <vector>

namespace {

volatile std::sig_atomic_t g_cut = 0, g_stop = 0;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "strata-test-wire: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}

double now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// Opens DEV (a persistent TUN device) inside network namespace NS. A TUN
// device belongs to the namespace of the process that attaches to it, so the
// program enters NS first and returns to its own namespace afterwards.
int attach(const std::string& ns, const std::string& dev) {
  const int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int there = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (home < 0 || there < 0) die("network namespace " + ns);
  if (setns(there, CLONE_NEWNET) != 0) die("entering network namespace " + ns);
  const int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) die("/dev/net/tun");
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::strncpy(ifr.ifr_name, dev.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("attaching to " + dev + " in " + ns);
  if (setns(home, CLONE_NEWNET) != 0) die("leaving network namespace " + ns);
  close(home);
  close(there);
  return fd;
}

struct Packet {
  double due_ms;
  std::vector<char> bytes;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: strata-test-wire NS_A DEV_A NS_B DEV_B [--delay-ms D] [--loss P] [--seed S]\n");
    return 2;
  }
  double delay_ms = 0, loss = 0;
  unsigned seed = 1;
  for (int i = 5; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--delay-ms") delay_ms = std::atof(argv[i + 1]);
    else if (a == "--loss") loss = std::atof(argv[i + 1]);
    else if (a == "--seed") seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "strata-test-wire: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const int fds[2] = {attach(argv[1], argv[2]), attach(argv[3], argv[4])};

  struct sigaction sa{};
  sa.sa_handler = [](int s) {
    if (s == SIGUSR1) g_cut = 1;
    else if (s == SIGUSR2) g_cut = 0;
    else g_stop = 1;
  };
  for (int s : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT}) sigaction(s, &sa, nullptr);
  std::printf("ready\n");
  std::fflush(stdout);

  // queue[i]: packets read from host i, due to be written into the other one.
  // A constant delay keeps each direction in order, so a FIFO suffices.
  std::deque<Packet> queue[2];
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<char> buf(65536);
  while (!g_stop) {
    const double now = now_ms();
    for (int i = 0; i < 2; ++i)
      while (!queue[i].empty() && queue[i].front().due_ms <= now) {
        // A full receive queue on the far side drops the packet, as a busy
        // link would; TCP retransmits it.
        if (!g_cut) (void)!write(fds[1 - i], queue[i].front().bytes.data(), queue[i].front().bytes.size());
        queue[i].pop_front();
      }
    double wait = 100;
    for (auto& q : queue)
      if (!q.empty()) wait = std::min(wait, q.front().due_ms - now);
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (poll(p, 2, static_cast<int>(std::max(0.0, wait) + 0.999)) < 0) continue;  // EINTR: a signal
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & POLLIN)) continue;
      for (;;) {
        const ssize_t n = read(fds[i], buf.data(), buf.size());
        if (n <= 0) break;
        if (g_cut || coin(rng) < loss) continue;
        queue[i].push_back({now_ms() + delay_ms, std::vector<char>(buf.begin(), buf.begin() + n)});
      }
    }
  }
  return 0;
}
