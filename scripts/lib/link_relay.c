/* A shaped Ethernet link in user space, for kernels without tc's netem
 * (scripts/check_scaling_netns.sh): forwards every frame that arrives on interface A out of
 * interface B and back, as a wire of RATE bit/s with DELAY microseconds of one-way propagation
 * delay would deliver it. Each direction is a FIFO link: a frame starts its serialisation when it
 * has arrived and the previous frame has left, takes (its bytes on the wire) * 8 / RATE seconds,
 * and is delivered DELAY later. Bytes on the wire count what a real Ethernet link sends: an
 * offloaded (GSO) frame is counted as the segments the NIC would cut it into, each with its own
 * headers, and every frame with the 24 bytes of preamble, frame check sequence and inter-frame gap.
 * Frames travel through packet sockets with virtio-net headers, so checksum and segmentation
 * offloads stay intact (large TCP segments cross as one frame). The queue is unbounded (no loss:
 * TCP's windows bound it).
 * Usage: link_relay IF_A IF_B DELAY_US RATE_BITS_PER_S [STATS_FILE]
 *   (RATE 0 = no rate limit). Runs until SIGTERM/SIGINT; then writes frame and byte counts per
 *   direction to STATS_FILE (or stderr). Needs CAP_NET_RAW; run it with SCHED_FIFO (chrt -f) on
 *   a busy host so that frames leave on time. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum { kMaxFrame = 65536 + 64, kHdr = sizeof(struct virtio_net_hdr) };

typedef struct Frame {
  struct Frame* next;
  int64_t release_ns; /* when it reaches the far end */
  size_t len;         /* virtio-net header + frame */
  unsigned char data[];
} Frame;

typedef struct {
  const char* name; /* "A->B" */
  int in, out;
  double ns_per_byte; /* 0 = no rate limit */
  int64_t delay_ns;
  int64_t link_free_ns; /* when the previous frame has left the sender */
  Frame *head, *tail;
  uint64_t frames, bytes, wire_bytes, max_queue;
  uint64_t queued;
} Direction;

static volatile sig_atomic_t stop = 0;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int open_interface(const char* name) {
  const unsigned index = if_nametoindex(name);
  if (index == 0) {
    fprintf(stderr, "link_relay: no interface %s: %s\n", name, strerror(errno));
    exit(1);
  }
  const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) {
    fprintf(stderr, "link_relay: packet socket: %s (needs CAP_NET_RAW)\n", strerror(errno));
    exit(1);
  }
  const int one = 1;
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) != 0 ||
      setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0) {
    fprintf(stderr, "link_relay: %s: packet socket options: %s\n", name, strerror(errno));
    exit(1);
  }
  const int buffer = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof buffer);
  struct sockaddr_ll at;
  memset(&at, 0, sizeof at);
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(ETH_P_ALL);
  at.sll_ifindex = (int)index;
  if (bind(fd, (struct sockaddr*)&at, sizeof at) != 0) {
    fprintf(stderr, "link_relay: bind to %s: %s\n", name, strerror(errno));
    exit(1);
  }
  return fd;
}

/* Bytes a real link sends for this frame (see the top). */
static uint64_t wire_bytes(const unsigned char* data, size_t len) {
  const struct virtio_net_hdr* h = (const struct virtio_net_hdr*)data;
  const size_t frame = len - kHdr;
  const unsigned gso = h->gso_size;
  if ((h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) == VIRTIO_NET_HDR_GSO_NONE || gso == 0)
    return frame + 24;
  /* Headers: up to the transport header's end. hdr_len is a hint that may be 0: then Ethernet +
     IPv4/IPv6 + TCP without options. */
  size_t header = h->hdr_len;
  if (header == 0 || header >= frame) header = 14 + 40 + 32;
  const size_t payload = frame - header;
  const uint64_t segments = (payload + gso - 1) / gso;
  return (uint64_t)frame + (segments - 1) * header + segments * 24;
}

static void enqueue(Direction* d, Frame* f, int64_t arrival) {
  const uint64_t wire = wire_bytes(f->data, f->len);
  int64_t start = arrival > d->link_free_ns ? arrival : d->link_free_ns;
  d->link_free_ns = start + (int64_t)(d->ns_per_byte * (double)wire);
  f->release_ns = d->link_free_ns + d->delay_ns;
  f->next = NULL;
  if (d->tail)
    d->tail->next = f;
  else
    d->head = f;
  d->tail = f;
  d->frames++;
  d->bytes += f->len - kHdr;
  d->wire_bytes += wire;
  if (++d->queued > d->max_queue) d->max_queue = d->queued;
}

static void* run(void* arg) {
  Direction* d = arg;
  prctl(PR_SET_TIMERSLACK, 1UL);
  struct pollfd p = {.fd = d->in, .events = POLLIN};
  while (!stop) {
    /* Deliver what is due. */
    int64_t now = now_ns();
    while (d->head && d->head->release_ns <= now) {
      Frame* f = d->head;
      if (send(d->out, f->data, f->len, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
        fprintf(stderr, "link_relay: %s: send: %s\n", d->name, strerror(errno));
      d->head = f->next;
      if (!d->head) d->tail = NULL;
      d->queued--;
      free(f);
    }
    /* Wait for a frame or for the next release. */
    struct timespec wait = {0, 100 * 1000 * 1000}; /* re-check `stop` every 0.1 s */
    if (d->head) {
      const int64_t left = d->head->release_ns - now;
      if (left < 100 * 1000 * 1000) wait = (struct timespec){0, left > 0 ? left : 0};
    }
    const int ready = ppoll(&p, 1, &wait, NULL);
    if (ready <= 0) continue;
    if (p.revents & (POLLHUP | POLLNVAL)) {
      fprintf(stderr, "link_relay: %s: the interface is gone\n", d->name);
      exit(1);
    }
    /* Take every frame waiting. */
    for (;;) {
      Frame* f = malloc(sizeof(Frame) + kMaxFrame);
      if (!f) {
        fprintf(stderr, "link_relay: out of memory\n");
        exit(1);
      }
      const ssize_t got = recv(d->in, f->data, kMaxFrame, MSG_DONTWAIT);
      if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        /* The interface went down or away: stop rather than spin (this thread may be real-time). */
        fprintf(stderr, "link_relay: %s: receive: %s\n", d->name, strerror(errno));
        exit(1);
      }
      if (got <= (ssize_t)kHdr) {
        free(f);
        break;
      }
      f->len = (size_t)got;
      enqueue(d, f, now_ns());
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  prctl(PR_SET_PDEATHSIG, SIGTERM); /* ends with the script that started it, however it ends */
  if (argc < 5) {
    fprintf(stderr, "usage: link_relay IF_A IF_B DELAY_US RATE_BITS_PER_S [STATS_FILE]\n");
    return 2;
  }
  const int a = open_interface(argv[1]), b = open_interface(argv[2]);
  const double delay_us = atof(argv[3]), rate = atof(argv[4]);
  if (delay_us < 0 || rate < 0) {
    fprintf(stderr, "link_relay: DELAY_US and RATE must be >= 0\n");
    return 2;
  }
  Direction dir[2] = {{.name = "A->B", .in = a, .out = b}, {.name = "B->A", .in = b, .out = a}};
  for (int i = 0; i < 2; ++i) {
    dir[i].delay_ns = (int64_t)(delay_us * 1000);
    dir[i].ns_per_byte = rate > 0 ? 8e9 / rate : 0;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  pthread_t t[2];
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, run, &dir[i]);
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  FILE* out = argc > 5 ? fopen(argv[5], "w") : stderr;
  if (!out) out = stderr;
  for (int i = 0; i < 2; ++i)
    fprintf(out, "%s: %llu frames, %llu bytes (%llu on the wire), longest queue %llu frames\n",
            dir[i].name, (unsigned long long)dir[i].frames, (unsigned long long)dir[i].bytes,
            (unsigned long long)dir[i].wire_bytes, (unsigned long long)dir[i].max_queue);
  return 0;
}
