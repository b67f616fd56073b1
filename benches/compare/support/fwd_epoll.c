/*
 * A minimal single-threaded epoll TCP forwarder, the connection-rate
 * ceiling reference for benches/compare/proxy.sh: no CONNECT, no policy,
 * no timers, the fewest system calls a relay can make per connection
 * (accept, socket, connect, two TCP_NODELAY, two epoll adds, the reads and
 * writes, the half-closes, two closes).
 *
 *   fwd_epoll LISTEN_PORT UPSTREAM_PORT      (both on 127.0.0.1)
 *
 * Writes that would block are finished in blocking mode: fine for the small
 * pages the rate benchmark moves, not a general relay.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct conn {
    int fd[2];      /* client, upstream */
    int open_dirs;  /* directions still moving data */
};

/* An epoll cookie: the connection and which side became readable. */
struct side { struct conn *c; int i; };

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
    close(c->fd[1]);
    free(s - s->i); /* the two sides are allocated together */
    free(c);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: fwd_epoll LISTEN_PORT UPSTREAM_PORT\n"); return 2; }
    int one = 1;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in up = addr;
    addr.sin_port = htons((unsigned short)atoi(argv[1]));
    up.sin_port = htons((unsigned short)atoi(argv[2]));
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(l, 4096) != 0) { perror("listen"); return 1; }
    int ep = epoll_create1(EPOLL_CLOEXEC);
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
                    int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                    if (u < 0 || connect(u, (struct sockaddr *)&up, sizeof up) != 0) {
                        close(c);
                        if (u >= 0) close(u);
                        continue;
                    }
                    fcntl(u, F_SETFL, O_NONBLOCK);
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *cn = malloc(sizeof *cn);
                    struct side *sides = malloc(2 * sizeof *sides);
                    if (!cn || !sides) { free(cn); free(sides); close(c); close(u); continue; }
                    cn->fd[0] = c;
                    cn->fd[1] = u;
                    cn->open_dirs = 2;
                    for (int i = 0; i < 2; i++) {
                        sides[i].c = cn;
                        sides[i].i = i;
                        struct epoll_event e = { .events = EPOLLIN, .data.ptr = &sides[i] };
                        epoll_ctl(ep, EPOLL_CTL_ADD, cn->fd[i], &e);
                    }
                }
                continue;
            }
            struct conn *c = s->c;
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
