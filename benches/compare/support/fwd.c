/*
 * A minimal TCP forwarder, the ceiling reference for benches/compare/proxy.sh:
 * no CONNECT, no policy, one thread per direction, blocking I/O.
 *
 *   fwd MODE LISTEN_PORT UPSTREAM_PORT      (both on 127.0.0.1)
 *   MODE: copy   = read/write through a 256 KiB buffer
 *         splice = socket -> pipe -> socket with splice(2), 1 MiB pipe
 *
 * Whatever it reaches on a machine is about the most any user-space relay
 * reaches there, since every byte still crosses loopback twice.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int use_splice;

/* One connection: both directions share it; the last one out closes. */
struct conn { int client, upstream, live; };
struct dir { struct conn *c; int from, to; };

static void pump_copy(int from, int to) {
    size_t size = 256 * 1024;
    char *buf = malloc(size);
    if (!buf) return;
    for (;;) {
        ssize_t n = read(from, buf, size);
        if (n <= 0) break;
        for (char *p = buf; n > 0;) {
            ssize_t m = write(to, p, (size_t)n);
            if (m <= 0) { free(buf); return; }
            n -= m;
            p += m;
        }
    }
    free(buf);
}

static void pump_splice(int from, int to) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return;
    fcntl(pipefd[1], F_SETPIPE_SZ, 1 << 20);
    for (;;) {
        ssize_t n = splice(from, NULL, pipefd[1], NULL, 1 << 20, SPLICE_F_MOVE);
        if (n <= 0) break;
        while (n > 0) {
            ssize_t m = splice(pipefd[0], NULL, to, NULL, (size_t)n, SPLICE_F_MOVE);
            if (m <= 0) goto out;
            n -= m;
        }
    }
out:
    close(pipefd[0]);
    close(pipefd[1]);
}

static void *pump(void *arg) {
    struct dir d = *(struct dir *)arg;
    free(arg);
    if (use_splice) pump_splice(d.from, d.to); else pump_copy(d.from, d.to);
    shutdown(d.to, SHUT_WR);
    if (__atomic_sub_fetch(&d.c->live, 1, __ATOMIC_ACQ_REL) == 0) {
        close(d.c->client);
        close(d.c->upstream);
        free(d.c);
    }
    return NULL;
}

static void start(struct conn *c, int from, int to) {
    struct dir *d = malloc(sizeof *d);
    pthread_t t;
    if (d) {
        d->c = c;
        d->from = from;
        d->to = to;
        if (pthread_create(&t, NULL, pump, d) == 0) { pthread_detach(t); return; }
        free(d);
    }
    /* Could not start this direction: count it as finished. */
    shutdown(to, SHUT_WR);
    if (__atomic_sub_fetch(&c->live, 1, __ATOMIC_ACQ_REL) == 0) {
        close(c->client);
        close(c->upstream);
        free(c);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: fwd copy|splice LISTEN_PORT UPSTREAM_PORT\n"); return 2; }
    use_splice = strcmp(argv[1], "splice") == 0;
    int one = 1;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in up = addr;
    addr.sin_port = htons((unsigned short)atoi(argv[2]));
    up.sin_port = htons((unsigned short)atoi(argv[3]));
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(l, 1024) != 0) { perror("listen"); return 1; }
    for (;;) {
        int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (u < 0 || connect(u, (struct sockaddr *)&up, sizeof up) != 0) { close(c); if (u >= 0) close(u); continue; }
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *cn = malloc(sizeof *cn);
        if (!cn) { close(c); close(u); continue; }
        cn->client = c;
        cn->upstream = u;
        cn->live = 2;
        start(cn, c, u);
        start(cn, u, c);
    }
}
