/* memlane's hook relay: hands a Claude Code hook's payload to the running daemon without starting Python.

   Registered by `memlane install` (memlane/relay.py compiles this file) as

       <relay> <python> -I -S <.../memlane/hook_launcher.py> <Event>

   Claude Code waits for SessionStart, UserPromptSubmit and Stop; a Python interpreter costs ~6.5 ms to start
   and a C program ~0.3 ms, several times a turn. With the daemon up, the daemon runs the hook anyway
   (memlane/daemon/warm.py): this program does exactly what warm.py's `answer` and `hand_off` do, in C. In
   every other case (no daemon, a refusal, a deadline missed, an event the daemon does not run) it executes the
   command in its arguments, the Python hook, and hands it the payload unchanged on its stdin, so nothing is
   lost and the Python hook decides what to store, spool or log.

   Mirrors warm.py: the same files in the data directory (daemon.json, daemon.token, daemon.slow), the same
   headers (X-Hook-Cwd, X-Hook-Env, X-Hook-Delivered), the same deadlines, the same payload limit. The
   payload never touches disk: a fallback gets it through a pipe. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#ifndef MSG_NOSIGNAL /* macOS: SIGPIPE is ignored instead (main) */
#define MSG_NOSIGNAL 0
#endif

#define RELAY_VERSION "memlane-hook-relay 1"
#define CONNECT_MS 100           /* warm.CONNECT_S */
#define ANSWER_MS 2000           /* warm.ANSWER_S */
#define ACCEPT_MS 500            /* warm.ACCEPT_S */
#define SLOW_S 60                /* warm.SLOW_S */
#define MAX_PAYLOAD (8u << 20)   /* warm.MAX_PAYLOAD_BYTES */
#define MAX_ANSWER (64u << 20)   /* an answer is context for the model: far smaller than this */

static const char *ANSWERED[] = {"SessionStart", "UserPromptSubmit", NULL};                  /* warm.EVENTS */
static const char *HANDED[] = {"PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", /* CAPTURE_EVENTS */
                               "SessionEnd", "PreCompact", NULL};

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static char **fallback_argv;

static int buf_add(buf_t *b, const void *data, size_t len) {
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (b->len + len + 1 > cap) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

static int buf_str(buf_t *b, const char *s) { return buf_add(b, s, strlen(s)); }

static int buf_hex(buf_t *b, const unsigned char *s, size_t len) {
    static const char digits[] = "0123456789abcdef";
    char pair[2];
    for (size_t i = 0; i < len; i++) {
        pair[0] = digits[s[i] >> 4];
        pair[1] = digits[s[i] & 15];
        if (buf_add(b, pair, 2)) return -1;
    }
    return 0;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; /* the reader is gone: nothing left to give it */
        data += n;
        len -= (size_t)n;
    }
}

/* The Python hook, with `payload` on its stdin (NULL: stdin was never read, it keeps Claude Code's).
   Small payloads fit in the pipe itself; a bigger one is written by a child while Python reads it. */
static void fall_back(const buf_t *payload) {
    if (payload) {
        int fds[2];
        if (pipe(fds) == 0) {
#ifdef F_SETPIPE_SZ
            if (payload->len > 65536) fcntl(fds[1], F_SETPIPE_SZ, (int)(payload->len < (1u << 20) ? payload->len : (1u << 20)));
#endif
            int size = 65536;
#ifdef F_GETPIPE_SZ
            int got = fcntl(fds[1], F_GETPIPE_SZ);
            if (got > 0) size = got;
#endif
            if (payload->len <= (size_t)size) {
                write_all(fds[1], payload->data, payload->len);
            } else if (fork() == 0) { /* the writer: nothing of Claude Code's pipes kept open, so it never waits on it */
                int null = open("/dev/null", O_RDWR);
                if (null >= 0) { dup2(null, 1); dup2(null, 2); }
                close(fds[0]);
                write_all(fds[1], payload->data, payload->len);
                _exit(0);
            }
            close(fds[1]);
            dup2(fds[0], 0);
            close(fds[0]);
        }
    }
    signal(SIGPIPE, SIG_DFL); /* as Claude Code started us */
    execv(fallback_argv[0], fallback_argv);
    fprintf(stderr, "memlane hook relay: cannot run %s: %s\n", fallback_argv[0], strerror(errno));
    _exit(0); /* fail open: Claude Code goes on */
}

static int in_list(const char *event, const char **list) {
    for (; *list; list++)
        if (strcmp(event, *list) == 0) return 1;
    return 0;
}

/* paths.home_dir(): MEMLANE_HOME (with a leading ~ or ~/ expanded) or ~/.memlane. NULL where Python would
   resolve it differently (~user), so the Python hook decides. */
static char *home_dir(void) {
    const char *raw = getenv("MEMLANE_HOME");
    const char *home = getenv("HOME");
    char *out = NULL;
    if (raw && *raw) {
        if (raw[0] != '~') return strdup(raw);
        if ((raw[1] != '\0' && raw[1] != '/') || !home || !*home) return NULL;
        if (asprintf(&out, "%s%s", home, raw + 1) < 0) return NULL;
        return out;
    }
    if (!home || !*home) return NULL;
    if (asprintf(&out, "%s/.memlane", home) < 0) return NULL;
    return out;
}

static int read_file(const char *dir, const char *name, char *out, size_t size) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = 0;
    ssize_t n;
    while (len + 1 < size && (n = read(fd, out + len, size - 1 - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            close(fd);
            return -1;
        }
        len += (size_t)n;
    }
    close(fd);
    out[len] = '\0';
    return (int)len;
}

/* wire._number: the digits after "key": in the daemon's own flat JSON file. */
static long number_of(const char *text, const char *key) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(text, quoted);
    if (!at || !(at = strchr(at, ':'))) return -1;
    at++;
    while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r') at++;
    if (*at < '0' || *at > '9') return -1;
    char *end;
    long value = strtol(at, &end, 10);
    return value > 0 ? value : -1;
}

/* wire.port: the running daemon's port, or -1 when there is none or its process is gone. */
static int daemon_port(const char *dir) {
    char text[4096];
    if (read_file(dir, "daemon.json", text, sizeof text) < 0) return -1;
    long pid = number_of(text, "pid"), port = number_of(text, "port");
    if (pid <= 0 || port <= 0 || port > 65535) return -1;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return -1;
    return (int)port;
}

static int slow(const char *dir) {
    char path[4096];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s/daemon.slow", dir) >= sizeof path) return 0;
    return stat(path, &st) == 0 && time(NULL) - st.st_mtime < SLOW_S;
}

static void mark_slow(const char *dir) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/daemon.slow", dir) >= sizeof path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs("the daemon missed a hook's deadline; hooks run themselves until a minute after this file's time\n", f);
    fclose(f);
}

/* Python sorts os.environ's items by key: compare the names (up to '='), then the values. */
static int by_name(const void *a, const void *b) {
    const unsigned char *x = *(const unsigned char *const *)a, *y = *(const unsigned char *const *)b;
    for (;; x++, y++) {
        int cx = *x == '=' ? -1 : *x, cy = *y == '=' ? -1 : *y;
        if (cx != cy) return cx < cy ? -1 : 1;
        if (cx == -1) return strcmp((const char *)x + 1, (const char *)y + 1);
        if (cx == 0) return 0;
    }
}

/* warm.environment(): the MEMLANE_* variables, "name=value" joined by NUL, as hex. */
static int env_hex(buf_t *out) {
    size_t count = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "MEMLANE_", 8) == 0 && strchr(*e, '=')) count++;
    const char **vars = calloc(count + 1, sizeof *vars);
    if (!vars) return -1;
    size_t n = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "MEMLANE_", 8) == 0 && strchr(*e, '=')) vars[n++] = *e;
    qsort(vars, n, sizeof *vars, by_name);
    for (size_t i = 0; i < n; i++) {
        if ((i && buf_hex(out, (const unsigned char *)"", 1)) ||
            buf_hex(out, (const unsigned char *)vars[i], strlen(vars[i]))) {
            free(vars);
            return -1;
        }
    }
    free(vars);
    return 0;
}

static int wait_for(int fd, short events, long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, (int)left);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static int connect_local(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int error = 0;
        socklen_t len = sizeof error;
        if (errno != EINPROGRESS || wait_for(fd, POLLOUT, now_ms() + CONNECT_MS) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static int send_all(int fd, const char *data, size_t len, long long deadline) {
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n > 0) {
            data += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_for(fd, POLLOUT, deadline) != 1) return -1;
        } else if (!(n < 0 && errno == EINTR)) {
            return -1;
        }
    }
    return 0;
}

/* warm._read: the body of an answer whose status is `status`. Returns 0 with the body in `body`; -1 for any
   other status or a closed connection; -2 when the deadline passed (the daemon is slow). */
static int read_answer(int fd, const char *status, long long deadline, buf_t *body) {
    buf_t in = {0};
    char chunk[65536];
    for (;;) {
        char *end = in.data ? strstr(in.data, "\r\n\r\n") : NULL;
        if (end) {
            size_t head = (size_t)(end - in.data);
            char expect[32];
            snprintf(expect, sizeof expect, "http/1.1 %s", status);
            if (strncasecmp(in.data, expect, strlen(expect)) != 0) return -1;
            const char *at = NULL;
            for (const char *p = in.data; p + 15 <= end; p++)
                if (strncasecmp(p, "content-length:", 15) == 0) { at = p + 15; break; }
            if (!at) return -1;
            unsigned long long length = strtoull(at, NULL, 10);
            if (length > MAX_ANSWER) return -1;
            if (in.len >= head + 4 + length) {
                if (length) buf_add(body, in.data + head + 4, (size_t)length);
                return 0;
            }
        }
        int ready = wait_for(fd, POLLIN, deadline);
        if (ready == 0) return -2;
        if (ready < 0) return -1;
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        if (buf_add(&in, chunk, (size_t)n)) return -1;
        if (in.len > MAX_ANSWER) return -1;
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        puts(RELAY_VERSION);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "memlane hook relay: usage: %s <python hook command...> <Event>\n", argv[0]);
        return 0;
    }
    fallback_argv = argv + 1;
    signal(SIGPIPE, SIG_IGN); /* a daemon or reader gone mid-write is an error return, not a killed hook */
    const char *event = argv[argc - 1];
    int answered = in_list(event, ANSWERED);
    if (!answered && !in_list(event, HANDED)) fall_back(NULL);

    char *dir = home_dir();
    if (!dir || slow(dir)) fall_back(NULL);
    int port = daemon_port(dir);
    char secret[512];
    if (port < 0 || read_file(dir, "daemon.token", secret, sizeof secret) <= 0) fall_back(NULL);
    secret[strcspn(secret, " \t\r\n")] = '\0';
    if (!*secret) fall_back(NULL);

    /* The payload: from here on, every way out that is not the daemon's answer replays it to Python. */
    struct timeval now;
    gettimeofday(&now, NULL); /* when Claude Code delivered it, as entry.hook takes time.time() before reading */
    buf_t payload = {0};
    char chunk[65536];
    for (;;) {
        ssize_t n = read(0, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (buf_add(&payload, chunk, (size_t)n)) fall_back(&payload); /* out of memory: replay what was read */
    }
    if (!payload.data) buf_add(&payload, "", 0);
    if (payload.len > MAX_PAYLOAD) fall_back(&payload);

    char cwd[8192];
    buf_t request = {0};
    char line[256];
    int ok = getcwd(cwd, sizeof cwd) != NULL;
    snprintf(line, sizeof line, "POST /api/hook/%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer ", event, port);
    ok = ok && !buf_str(&request, line) && !buf_str(&request, secret);
    snprintf(line, sizeof line, "\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nX-Hook-Cwd: ", payload.len);
    ok = ok && !buf_str(&request, line) && !buf_hex(&request, (const unsigned char *)cwd, strlen(cwd));
    ok = ok && !buf_str(&request, "\r\nX-Hook-Env: ") && !env_hex(&request) && !buf_str(&request, "\r\n");
    if (!answered) {
        snprintf(line, sizeof line, "X-Hook-Delivered: %ld.%06ld\r\n", (long)now.tv_sec, (long)now.tv_usec);
        ok = ok && !buf_str(&request, line);
    }
    ok = ok && !buf_str(&request, "Connection: close\r\n\r\n") && !buf_add(&request, payload.data, payload.len);
    if (!ok) fall_back(&payload);

    int fd = connect_local(port);
    long long deadline = now_ms() + CONNECT_MS;
    if (fd < 0 || send_all(fd, request.data, request.len, deadline + (answered ? ANSWER_MS : ACCEPT_MS))) fall_back(&payload);
    buf_t body = {0};
    int got = read_answer(fd, answered ? "200" : "202", now_ms() + (answered ? ANSWER_MS : ACCEPT_MS), &body);
    close(fd);
    if (got == -2) mark_slow(dir);
    if (got != 0) fall_back(&payload);
    if (body.len) { /* what the hook prints, as warm.answer's caller does */
        buf_add(&body, "\n", 1);
        write_all(1, body.data, body.len);
    }
    return 0;
}
