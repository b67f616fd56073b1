/*
 * A minimal single-threaded epoll relay, the connection-rate floor for
 * benches/compare/proxy.sh, in two modes:
 *
 *   fwd_epoll LISTEN_PORT UPSTREAM_PORT   a plain TCP forwarder: no CONNECT,
 *                                         no policy (the ceiling of any relay)
 *   fwd_epoll connect LISTEN_PORT         the smallest HTTP CONNECT proxy:
 *                                         reads the request head, dials the
 *                                         IPv4 literal it names, answers 200,
 *                                         then relays; no policy, no timers
 *
 * Both make the fewest system calls such a relay can per connection (accept,
 * socket, connect, two TCP_NODELAY, two epoll adds, the reads and writes,
 * the half-closes, two closes; the CONNECT mode adds the head's read and the
 * answer's write). Everything listens and dials on 127.0.0.1 only.
 *
 * Writes that would block are finished in blocking mode, and a CONNECT head
 * must arrive in one read of at most 1 KiB: fine for the benchmark's clients,
 * not a general relay.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct conn {
    int fd[2];      /* client, upstream (-1 until a CONNECT head is read) */
    int open_dirs;  /* directions still moving data */
};

/* An epoll cookie: the connection and which side became readable. */
struct side { struct conn *c; int i; };

static const int one = 1;
static int ep;

static int write_all(int fd, const char *p, ssize_t n) {
    while (n > 0) {
        ssize_t m = write(fd, p, (size_t)n);
        if (m < 0 && errno == EAGAIN) {
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            m = write(fd, p, (size_t)n);
            fcntl(fd, F_SETFL, fl);
        }
        if (m <= 0) return -1;
        n -= m;
        p += m;
    }
    return 0;
}

static void finish(struct conn *c, struct side *s) {
    close(c->fd[0]);
    if (c->fd[1] >= 0) close(c->fd[1]);
    free(s - s->i); /* the two sides are allocated together */
    free(c);
}

/* A blocking connect to 127.0.0.1-style address `to`, then non-blocking. */
static int dial(const struct sockaddr_in *to) {
    int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (u < 0) return -1;
    if (connect(u, (const struct sockaddr *)to, sizeof *to) != 0) {
        close(u);
        return -1;
    }
    fcntl(u, F_SETFL, O_NONBLOCK);
    setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return u;
}

static void watch(struct side *s) {
    struct epoll_event e = { .events = EPOLLIN, .data.ptr = s };
    epoll_ctl(ep, EPOLL_CTL_ADD, s->c->fd[s->i], &e);
}

/* "CONNECT a.b.c.d:port HTTP/1.x\r\n...\r\n\r\n" -> the address, and where the
 * head ends; -1 for anything else. */
static int parse_connect(char *head, ssize_t n, struct sockaddr_in *to, ssize_t *end) {
    head[n] = 0;
    char *stop = strstr(head, "\r\n\r\n");
    if (!stop || strncmp(head, "CONNECT ", 8) != 0) return -1;
    *end = stop + 4 - head;
    char *host = head + 8, *colon = strchr(host, ':');
    if (!colon) return -1;
    *colon = 0;
    int port = atoi(colon + 1);
    memset(to, 0, sizeof *to);
    to->sin_family = AF_INET;
    to->sin_port = htons((unsigned short)port);
    if (port <= 0 || port > 65535 || inet_pton(AF_INET, host, &to->sin_addr) != 1) return -1;
    return 0;
}

static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

int main(int argc, char **argv) {
    int connect_mode = argc == 3 && strcmp(argv[1], "connect") == 0;
    if (argc != 3) {
        fprintf(stderr, "usage: fwd_epoll LISTEN_PORT UPSTREAM_PORT | fwd_epoll connect LISTEN_PORT\n");
        return 2;
    }
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in up = addr;
    addr.sin_port = htons((unsigned short)atoi(argv[connect_mode ? 2 : 1]));
    if (!connect_mode) up.sin_port = htons((unsigned short)atoi(argv[2]));
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(l, 4096) != 0) { perror("listen"); return 1; }
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    static char buf[64 * 1024];
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int k = 0; k < n; k++) {
            struct side *s = evs[k].data.ptr;
            if (!s) {
                for (;;) {
                    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                    if (c < 0) break;
                    int u = connect_mode ? -1 : dial(&up);
                    if (!connect_mode && u < 0) { close(c); continue; }
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *cn = malloc(sizeof *cn);
                    struct side *sides = malloc(2 * sizeof *sides);
                    if (!cn || !sides) { free(cn); free(sides); close(c); if (u >= 0) close(u); continue; }
                    cn->fd[0] = c;
                    cn->fd[1] = u;
                    cn->open_dirs = 2;
                    for (int i = 0; i < 2; i++) {
                        sides[i].c = cn;
                        sides[i].i = i;
                    }
                    watch(&sides[0]);
                    if (u >= 0) watch(&sides[1]);
                }
                continue;
            }
            struct conn *c = s->c;
            if (c->fd[1] < 0) {
                /* The CONNECT head, in one read. */
                static char head[1025];
                ssize_t r = read(c->fd[0], head, sizeof head - 1), end = 0;
                struct sockaddr_in to;
                if (r < 0 && errno == EAGAIN) continue;
                int u = -1;
                if (r <= 0 || parse_connect(head, r, &to, &end) != 0 || (u = dial(&to)) < 0
                    || write_all(c->fd[0], established, sizeof established - 1) != 0
                    || (r > end && write_all(u, head + end, r - end) != 0)) {
                    if (u >= 0) close(u);
                    finish(c, s);
                    continue;
                }
                c->fd[1] = u;
                watch(s + 1);
                continue;
            }
            int from = c->fd[s->i], to = c->fd[1 - s->i];
            ssize_t r = read(from, buf, sizeof buf);
            if (r < 0 && errno == EAGAIN) continue;
            if (r > 0 && write_all(to, buf, r) == 0) continue;
            /* End of stream (or an error): pass the half-close on. */
            struct epoll_event none = { 0 };
            epoll_ctl(ep, EPOLL_CTL_DEL, from, &none);
            shutdown(to, SHUT_WR);
            if (--c->open_dirs == 0) finish(c, s);
        }
    }
}
