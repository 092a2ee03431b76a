/*
 * prom_http.c - /metrics over HTTP with libmicrohttpd (see prom_http.h).
 *
 * libmicrohttpd is loaded at run time (dlopen), the first time --serve is
 * asked for, so that `stepscope` builds without its headers and runs
 * without it: the pip wheel's CLI, which may need nothing outside the
 * manylinux policy, and the CMake build's are the same code.  It is
 * libmicrohttpd.so.12 (its soname in every current distribution), or
 * the file STEPSCOPE_LIBMICROHTTPD names.  Where the library or one of its
 * calls is missing, --serve says so in one line and the job runs on
 * without the server, as for an address that cannot be served.
 *
 * stepscope binds the listening socket itself, so a malformed address or
 * a port in use is told in stepscope's own one line with the reason the
 * kernel gave, and hands it to libmicrohttpd, whose one internal thread
 * accepts and answers every connection.  That thread starts with every
 * signal blocked: signals are `stepscope run`'s to forward to the
 * workload.
 */
#include "prom_http.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "render/prom_text.h"
#include "run_prom.h"
#include "platform/env_path.h"

/* ------------------------------------------------ libmicrohttpd's ABI
 * The part of libmicrohttpd's interface used here, declared here (nothing
 * of its headers is needed to build).  Values and signatures follow its
 * public header, microhttpd.h (checked against 0.9.75, MHD_VERSION
 * 0x00097500, Debian 12's libmicrohttpd-dev); they are the ABI of
 * libmicrohttpd.so.12, which older headers spell differently in places
 * (MHD_USE_SELECT_INTERNALLY for 8, int where MHD_Result is now).  Its
 * enums (MHD_Result, MHD_ValueKind, MHD_ResponseMemoryMode, MHD_OPTION)
 * are int-sized C enums, passed here as int; MHD_socket is int on POSIX
 * systems. */
#define SPS_MHD_SONAME "libmicrohttpd.so.12"

enum { SPS_MHD_NO = 0, SPS_MHD_YES = 1 };                       /* enum MHD_Result */
enum { SPS_MHD_USE_INTERNAL_POLLING_THREAD = 8 };                /* enum MHD_FLAG */
enum {                                                          /* enum MHD_OPTION */
    SPS_MHD_OPTION_END = 0,
    SPS_MHD_OPTION_CONNECTION_LIMIT = 2,   /* then an unsigned int */
    SPS_MHD_OPTION_CONNECTION_TIMEOUT = 3, /* then an unsigned int: seconds */
    SPS_MHD_OPTION_LISTEN_SOCKET = 12      /* then an MHD_socket */
};
enum { SPS_MHD_RESPMEM_PERSISTENT = 0, SPS_MHD_RESPMEM_MUST_FREE = 1 }; /* enum MHD_ResponseMemoryMode */
enum { SPS_MHD_HEADER_KIND = 1 };                                       /* enum MHD_ValueKind */

struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

/* MHD_AcceptPolicyCallback and MHD_AccessHandlerCallback */
typedef int (*sps_mhd_accept_policy)(void *cls, const struct sockaddr *addr, socklen_t addrlen);
typedef int (*sps_mhd_access_handler)(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                      const char *version, const char *upload_data, size_t *upload_data_size,
                                      void **con_cls);

struct sps_mhd_api {
    struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, sps_mhd_accept_policy apc, void *apc_cls,
                                       sps_mhd_access_handler dh, void *dh_cls, ...);
    void (*stop_daemon)(struct MHD_Daemon *daemon);
    struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer, int mode);
    int (*add_response_header)(struct MHD_Response *response, const char *header, const char *content);
    int (*queue_response)(struct MHD_Connection *conn, unsigned int status_code, struct MHD_Response *response);
    void (*destroy_response)(struct MHD_Response *response);
    const char *(*lookup_connection_value)(struct MHD_Connection *conn, int kind, const char *key);
};

/* Loaded once, and kept for the life of the process (it brings gnutls,
 * which is not made to be unloaded); mhd.start_daemon is NULL when it
 * could not be, and mhd_error says why.  mhd_file: where the loader
 * found it. */
static struct sps_mhd_api mhd;
static char mhd_error[512];
static char mhd_file[PATH_MAX];
static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;

/* One symbol into *slot; -1 (with mhd_error set) when the library lacks it. */
static int resolve(void *lib, const char *name, void *slot) {
    dlerror();
    void *sym = dlsym(lib, name);
    const char *e = dlerror();
    if (!sym || e) {
        snprintf(mhd_error, sizeof mhd_error, "%s", e ? e : name);
        return -1;
    }
    memcpy(slot, &sym, sizeof sym); /* a data pointer into a function pointer, as POSIX dlsym allows */
    return 0;
}

static void load_mhd(void) {
    const char *path = sps__env_path("STEPSCOPE_LIBMICROHTTPD");
    if (!path)
        path = SPS_MHD_SONAME;
    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(mhd_error, sizeof mhd_error, "%s", e ? e : path);
        return;
    }
    struct sps_mhd_api api;
    if (resolve(lib, "MHD_start_daemon", &api.start_daemon) || resolve(lib, "MHD_stop_daemon", &api.stop_daemon) ||
        resolve(lib, "MHD_create_response_from_buffer", &api.create_response_from_buffer) ||
        resolve(lib, "MHD_add_response_header", &api.add_response_header) ||
        resolve(lib, "MHD_queue_response", &api.queue_response) ||
        resolve(lib, "MHD_destroy_response", &api.destroy_response) ||
        resolve(lib, "MHD_lookup_connection_value", &api.lookup_connection_value)) {
        dlclose(lib);
        return;
    }
    Dl_info info;
    void *start;
    memcpy(&start, &api.start_daemon, sizeof start);
    snprintf(mhd_file, sizeof mhd_file, "%s", dladdr(start, &info) && info.dli_fname ? info.dli_fname : path);
    mhd = api;
}

/* what to install, where it is missing */
#define MHD_NEEDED                                                                                                     \
    "needs libmicrohttpd (Debian/Ubuntu: libmicrohttpd12; Fedora/RHEL: libmicrohttpd; Arch, Alpine: libmicrohttpd)"

int sps_prom_http_library(char *where, size_t cap) {
    pthread_once(&mhd_once, load_mhd);
    if (mhd.start_daemon)
        snprintf(where, cap, "%s", mhd_file);
    else
        snprintf(where, cap, "--serve " MHD_NEEDED ": %s", mhd_error);
    return mhd.start_daemon != NULL;
}

/* The library's calls, or NULL after one line on stderr saying what is
 * missing. */
static const struct sps_mhd_api *mhd_api(void) {
    pthread_once(&mhd_once, load_mhd);
    if (mhd.start_daemon)
        return &mhd;
    char why[768];
    snprintf(why, sizeof why,
             MHD_NEEDED ": %s; the job runs without /metrics; --prom-textfile FILE writes the same metrics", mhd_error);
    sps_cli_error("run", "--serve", why, 0);
    return NULL;
}

struct sps_prom_http {
    const struct sps_mhd_api *mhd;
    struct MHD_Daemon *daemon;
    struct sps_run_prom *prom;
};

static const char index_page[] = "stepscope: the job's metrics are at /metrics\n";

/* HTTP status codes and names, as RFC 9110 spells them */
enum { HTTP_OK = 200, HTTP_NOT_FOUND = 404, HTTP_METHOD_NOT_ALLOWED = 405, HTTP_INTERNAL_SERVER_ERROR = 500 };

static int answer(const struct sps_mhd_api *api, struct MHD_Connection *conn, unsigned status, const char *type,
                  char *body, size_t len, int mode) {
    struct MHD_Response *r = api->create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == SPS_MHD_RESPMEM_MUST_FREE)
            free(body);
        return SPS_MHD_NO;
    }
    api->add_response_header(r, "Content-Type", type);
    int ok = api->queue_response(conn, status, r);
    api->destroy_response(r);
    return ok;
}

static int on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                      const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls) {
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    struct sps_prom_http *h = cls;
    const struct sps_mhd_api *api = h->mhd;
    const char *text = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return answer(api, conn, HTTP_METHOD_NOT_ALLOWED, text, (char *)"only GET and HEAD\n", 18,
                      SPS_MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/"))
        return answer(api, conn, HTTP_OK, text, (char *)index_page, sizeof index_page - 1,
                      SPS_MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/metrics"))
        return answer(api, conn, HTTP_NOT_FOUND, text, (char *)"not found: the metrics are at /metrics\n", 39,
                      SPS_MHD_RESPMEM_PERSISTENT);
    enum sps__prom_format f = sps__prom_negotiate(api->lookup_connection_value(conn, SPS_MHD_HEADER_KIND, "Accept"));
    const struct sps__prom_snapshot *s = sps_run_prom_acquire(h->prom);
    size_t len = 0;
    char *body = sps__prom_render(s, f, &len);
    sps_run_prom_release(h->prom, s);
    if (!body)
        return answer(api, conn, HTTP_INTERNAL_SERVER_ERROR, text, (char *)"out of memory\n", 14,
                      SPS_MHD_RESPMEM_PERSISTENT);
    return answer(api, conn, HTTP_OK, sps__prom_content_type(f), body, len, SPS_MHD_RESPMEM_MUST_FREE);
}

/* Split "HOST:PORT", "[V6]:PORT" or ":PORT" into host (empty: every
 * interface) and port.  -1 when addr is not one of those. */
static int split_addr(const char *addr, char *host, size_t hostlen, char *port, size_t portlen) {
    const char *colon;
    size_t hl;
    const char *h = addr;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return -1;
        h = addr + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
        if (!hl)
            return -1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
            return -1; /* none, or a bare IPv6 address: it needs brackets */
        hl = (size_t)(colon - addr);
    }
    const char *p = colon + 1;
    size_t pl = strlen(p);
    if (hl >= hostlen || !pl || pl > 5 || pl >= portlen || strspn(p, "0123456789") != pl || atol(p) > 65535)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, p, pl + 1);
    return 0;
}

/* Bind and listen on a, or -1 with errno set. */
static int bind_listen(int family, const struct sockaddr *a, socklen_t len) {
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6) /* "::" takes IPv4 connections too */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, a, len) != 0 || listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* A listening socket on addr; -1 after one line on stderr. */
static int listen_on(const char *addr, int *port_out) {
    char host[256], port[8], why[320];
    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0) {
        char what[300];
        snprintf(what, sizeof what, "--serve '%s'", addr);
        sps_cli_error("run", what, "not HOST:PORT (e.g. 127.0.0.1:9400, [::1]:9400 or :9400 for every interface); "
                                   "the job runs without /metrics",
                      0);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char what[300];
    snprintf(what, sizeof what, "--serve %s", addr);
    int gai = getaddrinfo(*host ? host : NULL, port, &hints, &res);
    if (gai != 0) {
        snprintf(why, sizeof why, "cannot resolve '%s': %s; the job runs without /metrics", host, gai_strerror(gai));
        sps_cli_error("run", what, why, 0);
        return -1;
    }
    int fd = -1, err = 0;
    struct addrinfo *first = res;
    if (!*host) { /* every interface: IPv6 and IPv4 on one socket where the kernel has IPv6 */
        struct sockaddr_in6 any = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(port)),
                                   .sin6_addr = IN6ADDR_ANY_INIT};
        fd = bind_listen(AF_INET6, (const struct sockaddr *)&any, sizeof any);
        err = errno;
        if (fd < 0 && err == EADDRINUSE)
            first = NULL; /* in use is in use: IPv4 alone would say the same */
    }
    for (struct addrinfo *a = fd < 0 ? first : NULL; a && fd < 0; a = a->ai_next) {
        fd = bind_listen(a->ai_family, a->ai_addr, a->ai_addrlen);
        if (fd < 0)
            err = errno;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(why, sizeof why, "%s; the job runs without /metrics", strerror(err));
        sps_cli_error("run", what, why, 0);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *port_out = atoi(port);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

struct sps_prom_http *sps_prom_http_start(const char *addr, struct sps_run_prom *prom, int quiet) {
    const struct sps_mhd_api *api = mhd_api();
    if (!api)
        return NULL;
    int port = 0;
    int fd = listen_on(addr, &port);
    if (fd < 0)
        return NULL;
    struct sps_prom_http *h = calloc(1, sizeof *h);
    if (!h) {
        close(fd);
        sps_cli_error("run", "--serve", strerror(ENOMEM), 0);
        return NULL;
    }
    h->mhd = api;
    h->prom = prom;
    /* the server's thread inherits this mask: every signal blocked */
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    /* the options' values are read with va_arg as the types noted above */
    h->daemon = api->start_daemon(SPS_MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, h,
                                  SPS_MHD_OPTION_LISTEN_SOCKET, fd, SPS_MHD_OPTION_CONNECTION_LIMIT,
                                  (unsigned)32, SPS_MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                                  SPS_MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (!h->daemon) {
        close(fd);
        free(h);
        sps_cli_error("run", "--serve", "the HTTP server could not start; the job runs without /metrics", 0);
        return NULL;
    }
    if (!quiet) {
        char host[256], p[8];
        split_addr(addr, host, sizeof host, p, sizeof p);
        int v6 = strchr(host, ':') != NULL;
        char me[256] = "";
        if (!*host && gethostname(me, sizeof me - 1) != 0)
            strcpy(me, "localhost");
        fprintf(stderr, "stepscope: run: serving metrics on http://%s%s%s:%d/metrics%s\n", v6 ? "[" : "",
                *host ? host : me, v6 ? "]" : "", port, *host ? "" : " (every interface)");
    }
    return h;
}

void sps_prom_http_stop(struct sps_prom_http *h) {
    if (!h)
        return;
    h->mhd->stop_daemon(h->daemon); /* also closes the listening socket */
    free(h);
}
