/* Attack and probe program for the name-guard tests: one operation per run.
   Prints "ok" and exits 0 when the operation succeeded, prints
   "err <errno-name>" and exits 1 when it failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>

struct how { uint64_t flags, mode, resolve; };

static int report(long r) {
  if (r < 0) {
    printf("err %s\n", strerrorname_np(errno));
    return 1;
  }
  printf("ok\n");
  return 0;
}

static char buf[256];
static volatile int stop;
static volatile long alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }
static const char *good, *bad;

static void *flipper_addr(void *arg) {
  struct sockaddr_un *a = arg;
  while (!stop) {
    strcpy(a->sun_path, bad);
    strcpy(a->sun_path, good);
  }
  return NULL;
}

static volatile uint16_t good_port, bad_port;

static void *flipper_port(void *arg) {
  volatile struct sockaddr_in *a = arg;
  while (!stop) {
    a->sin_port = bad_port;
    a->sin_port = good_port;
  }
  return NULL;
}

static void *flipper(void *arg) {
  (void)arg;
  while (!stop) {
    strcpy(buf, bad);
    strcpy(buf, good);
  }
  return NULL;
}

static void *set_umask(void *arg) {
  umask((mode_t)(uintptr_t)arg);
  return NULL;
}

static void *create_file(void *arg) {
  int fd = open(arg, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
  if (fd >= 0) close(fd);
  return NULL;
}

/* The permission bits of PATH in octal, or "none". */
static void print_mode(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) printf(" none");
  else printf(" %o", st.st_mode & 0777);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *m = argv[1];
  if (!strcmp(m, "open")) return report(open(argv[2], O_CREAT | O_WRONLY, 0644));
  if (!strcmp(m, "open_excl")) return report(open(argv[2], O_CREAT | O_EXCL | O_WRONLY, 0644));
  if (!strcmp(m, "openat")) {
    int d = open(argv[2], O_DIRECTORY | O_RDONLY);
    if (d < 0) return report(d);
    return report(openat(d, argv[3], O_CREAT | O_WRONLY, 0644));
  }
  if (!strcmp(m, "openat2")) {
    struct how h = {O_CREAT | O_WRONLY, 0644, 0};
    return report(syscall(SYS_openat2, AT_FDCWD, argv[2], &h, sizeof h));
  }
  if (!strcmp(m, "creat")) return report(creat(argv[2], 0644));
  if (!strcmp(m, "mknod")) return report(mknod(argv[2], S_IFREG | 0644, 0));
  if (!strcmp(m, "mkfifo")) return report(mkfifo(argv[2], 0644));
  if (!strcmp(m, "rename")) return report(rename(argv[2], argv[3]));
  if (!strcmp(m, "renameat2"))
    return report(syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], 1 /* NOREPLACE */));
  if (!strcmp(m, "exchange"))
    return report(syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], 2 /* EXCHANGE */));
  if (!strcmp(m, "mkdir")) return report(mkdir(argv[2], 0755));
  if (!strcmp(m, "mkdirat")) {
    int d = open(argv[2], O_DIRECTORY | O_RDONLY);
    if (d < 0) return report(d);
    return report(mkdirat(d, argv[3], 0755));
  }
  if (!strcmp(m, "link")) return report(link(argv[2], argv[3]));
  if (!strcmp(m, "symlink")) return report(symlink(argv[2], argv[3]));
  if (!strcmp(m, "tmpfile") || !strcmp(m, "tmpfile_empty")) {
    int fd = open(argv[2], O_TMPFILE | O_WRONLY, 0600);
    if (fd < 0) return report(fd);
    if (write(fd, "tmp\n", 4) != 4) return report(-1);
    if (!strcmp(m, "tmpfile")) {
      char p[64];
      snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
      return report(linkat(AT_FDCWD, p, AT_FDCWD, argv[3], AT_SYMLINK_FOLLOW));
    }
    return report(linkat(fd, "", AT_FDCWD, argv[3], AT_EMPTY_PATH));
  }
  if (!strcmp(m, "iouring")) {
    char params[120] = {0};
    return report(syscall(SYS_io_uring_setup, 1, params));
  }
  if (!strcmp(m, "handle")) {
    char h[256] = {0};
    int mount_id;
    *(unsigned *)h = 128;
    return report(syscall(SYS_name_to_handle_at, AT_FDCWD, ".", h, &mount_id, 0));
  }
  if (!strcmp(m, "umask_threads")) {
    /* Creations under umasks that threads and a child set: each file is
       created 0666 under the mask of its creator at that moment. Prints
       the modes of a to f. */
    pthread_t t;
    umask(022);
    create_file("a");
    pthread_create(&t, NULL, set_umask, (void *)(uintptr_t)077);
    pthread_join(t, NULL);
    create_file("b");
    umask(027);
    pthread_create(&t, NULL, create_file, "c");
    pthread_join(t, NULL);
    pid_t child = fork();
    if (child == 0) {
      create_file("d");
      umask(0);
      create_file("e");
      _exit(0);
    }
    waitpid(child, NULL, 0);
    create_file("f");
    printf("modes");
    for (const char *p = "abcdef"; *p; p++) {
      char name[2] = {*p, 0};
      print_mode(name);
    }
    printf("\n");
    return 0;
  }
  if (!strcmp(m, "write_read")) {
    /* create, write, reopen, read back */
    int fd = open(argv[2], O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return report(fd);
    int flags = fcntl(fd, F_GETFD);
    if (!(flags & FD_CLOEXEC)) { printf("cloexec lost\n"); return 4; }
    if (write(fd, "payload\n", 8) != 8) return report(-1);
    close(fd);
    fd = open(argv[2], O_CREAT | O_RDONLY, 0666);
    if (fd < 0) return report(fd);
    if (fcntl(fd, F_GETFD) & FD_CLOEXEC) { printf("cloexec added\n"); return 4; }
    char b[16] = {0};
    if (read(fd, b, sizeof b) != 8 || strcmp(b, "payload\n")) { printf("bad content\n"); return 4; }
    struct stat st;
    if (stat(argv[2], &st) != 0) return report(-1);
    printf("mode %o\n", st.st_mode & 0777);
    return report(0);
  }
  if (!strcmp(m, "race") || !strcmp(m, "race_rename")) {
    /* race GOOD BAD ITER: a second thread rewrites the path buffer between
       GOOD and BAD while the main thread creates (or renames into) it. */
    good = argv[2];
    bad = argv[3];
    int iters = atoi(argv[4]);
    strcpy(buf, good);
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    int created = 0, refused = 0;
    for (int i = 0; i < iters; i++) {
      long r;
      if (!strcmp(m, "race")) {
        r = open(buf, O_CREAT | O_WRONLY, 0644);
        if (r >= 0) close((int)r);
      } else {
        close(open("src", O_CREAT | O_WRONLY, 0644));
        r = rename("src", buf);
      }
      if (r >= 0) created++; else refused++;
      if (access(bad, F_OK) == 0) {
        printf("race lost at %d\n", i);
        stop = 1;
        return 3;
      }
      unlink(good);
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("created %d refused %d\n", created, refused);
    return 0;
  }
  if (!strcmp(m, "bind_unix") || !strcmp(m, "bind_abstract") || !strcmp(m, "bind_tcp")) {
    /* bind_unix PATH | bind_abstract NAME | bind_tcp: bind a new socket. */
    int tcp = !strcmp(m, "bind_tcp");
    int s = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
    if (tcp) {
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return report(bind(s, (struct sockaddr *)&a, sizeof a));
    }
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    socklen_t len;
    if (!strcmp(m, "bind_abstract")) {
      strncpy(a.sun_path + 1, argv[2], sizeof a.sun_path - 2);
      len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(argv[2]);
    } else {
      strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
      len = sizeof a;
    }
    return report(bind(s, (struct sockaddr *)&a, len));
  }
  if (!strcmp(m, "bind_race")) {
    /* bind_race GOOD BAD ITER: a second thread rewrites the address's path
       between GOOD and BAD while the main thread binds fresh sockets. */
    good = argv[2];
    bad = argv[3];
    int iters = atoi(argv[4]);
    static struct sockaddr_un shared;
    memset(&shared, 0, sizeof shared);
    shared.sun_family = AF_UNIX;
    strcpy(buf, good);
    pthread_t t;
    pthread_create(&t, NULL, flipper_addr, &shared);
    for (int i = 0; i < iters; i++) {
      int s = socket(AF_UNIX, SOCK_STREAM, 0);
      bind(s, (struct sockaddr *)&shared, sizeof shared);
      close(s);
      unlink(good);
      if (access(bad, F_OK) == 0) {
        printf("race lost at %d\n", i);
        stop = 1;
        return 3;
      }
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("held %d\n", iters);
    return 0;
  }
  if (!strcmp(m, "connect_unix")) {
    /* connect_unix PATH: connect a new stream socket to PATH. */
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
    return report(connect(s, (struct sockaddr *)&a, sizeof a));
  }
  if (!strcmp(m, "connect_unix_nonblock")) {
    /* connect_unix_nonblock PATH: the same with a non-blocking socket. */
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
    return report(connect(s, (struct sockaddr *)&a, sizeof a));
  }
  if (!strcmp(m, "serve_connect")) {
    /* serve_connect PATH: bind and listen on PATH, connect to it, accept,
       and pass a byte through. */
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0) return report(-1);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a) < 0) return report(-1);
    int s = accept(l, NULL, NULL);
    if (s < 0 || write(c, "x", 1) != 1) return report(-1);
    char b;
    return report(read(s, &b, 1) == 1 && b == 'x' ? 0 : -1);
  }
  if (!strcmp(m, "connect_tcp")) {
    /* connect_tcp PORT: connect to 127.0.0.1:PORT. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)atoi(argv[2]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return report(connect(s, (struct sockaddr *)&a, sizeof a));
  }
  if (!strcmp(m, "connect_race")) {
    /* connect_race GOOD BAD ITER: listen on GOOD (bound here, so allowed),
       then connect fresh sockets while a second thread rewrites the
       address's path between GOOD and BAD. */
    good = argv[2];
    bad = argv[3];
    int iters = atoi(argv[4]);
    static struct sockaddr_un shared;
    memset(&shared, 0, sizeof shared);
    shared.sun_family = AF_UNIX;
    strcpy(shared.sun_path, good);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (bind(l, (struct sockaddr *)&shared, sizeof shared) < 0 || listen(l, 128) < 0)
      return report(-1);
    pthread_t t;
    pthread_create(&t, NULL, flipper_addr, &shared);
    int connected = 0, refused = 0;
    for (int i = 0; i < iters; i++) {
      int s = socket(AF_UNIX, SOCK_STREAM, 0);
      if (connect(s, (struct sockaddr *)&shared, sizeof shared) == 0) connected++;
      else refused++;
      close(s);
      int a2;
      while ((a2 = accept(l, NULL, NULL)) >= 0) close(a2);
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("connected %d refused %d\n", connected, refused);
    return 0;
  }
  if (!strcmp(m, "tcp_race")) {
    /* tcp_race GOOD BAD ITER: connect fresh TCP sockets to 127.0.0.1:GOOD
       while a second thread rewrites the port between GOOD and BAD. */
    good_port = htons((uint16_t)atoi(argv[2]));
    bad_port = htons((uint16_t)atoi(argv[3]));
    int iters = atoi(argv[4]);
    static struct sockaddr_in shared;
    memset(&shared, 0, sizeof shared);
    shared.sin_family = AF_INET;
    shared.sin_port = good_port;
    shared.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_t t;
    pthread_create(&t, NULL, flipper_port, &shared);
    int connected = 0, refused = 0;
    for (int i = 0; i < iters; i++) {
      int s = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(s, (struct sockaddr *)&shared, sizeof shared) == 0) connected++;
      else refused++;
      close(s);
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("connected %d refused %d\n", connected, refused);
    return 0;
  }
  if (!strcmp(m, "nondumpable_create")) {
    /* nondumpable_create NAME: make this process non-dumpable, then create
       NAME. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return report(open(argv[2], O_CREAT | O_WRONLY, 0644));
  }
  if (!strcmp(m, "signal_storm")) {
    /* signal_storm N: N exclusive creates, renames and mkdirs of fresh
       names while a 20 us interval timer keeps interrupting; prints how
       many failed (a call performed twice by the guard after a restart
       fails with EEXIST or ENOENT). */
    int n = atoi(argv[2]), failed = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &it, NULL);
    char a[64], b[64];
    for (int i = 0; i < n; i++) {
      snprintf(a, sizeof a, "s%d", i);
      snprintf(b, sizeof b, "r%d", i);
      int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) failed++; else close(fd);
      if (rename(a, b) != 0) failed++;
      snprintf(a, sizeof a, "d%d", i);
      if (mkdir(a, 0755) != 0) failed++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("failed %d signals %ld\n", failed, alarms);
    return 0;
  }
  if (!strcmp(m, "deny_many")) {
    /* deny_many N PATH: N creating opens of PATH; prints how many were
       refused with EACCES. */
    int n = atoi(argv[2]), refused = 0;
    for (int i = 0; i < n; i++) {
      int fd = open(argv[3], O_CREAT | O_WRONLY, 0644);
      if (fd >= 0) close(fd);
      else if (errno == EACCES) refused++;
    }
    printf("refused %d\n", refused);
    return 0;
  }
  if (!strcmp(m, "killsup")) {
    kill(getppid(), SIGKILL);
    for (int i = 0; i < 50; i++) {
      usleep(10000);
      if (open(argv[2], O_CREAT | O_WRONLY, 0644) >= 0) { printf("created\n"); return 5; }
    }
    return report(-1);
  }
  return 2;
}
