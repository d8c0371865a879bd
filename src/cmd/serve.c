/* serve: gpuwho metrics over HTTP (/metrics, /healthz) for Prometheus, with libmicrohttpd. One
 * collector thread collects when a scrape asks, never two collections at once; scrapes that come
 * while it runs get the last answer; a scrape waits at most the scrape timeout. */
#include "cmd/cmd.h"
#include "cmd/common.h"

#ifdef GPUWHO_NO_SERVE
/* `make static` leaves the HTTP server out: libmicrohttpd needs GnuTLS, which has no static form
 * worth shipping. gpuwho metrics -o with node_exporter's textfile collector does the same job. */
int cmd_serve(int argc, char **argv)
{
	(void)argc, (void)argv;
	cli_error(&(struct cli){.cmd = "serve"}, "this gpuwho was built without the HTTP server (make static); run "
		  "`gpuwho metrics -o FILE` for node_exporter's textfile collector, or install the package");
	return EXIT_CANNOT;
}
#else
#include "cmd/scrape.h"
#include "render/metrics.h"
#include "util.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SERVE_LISTEN_DEFAULT "127.0.0.1:9835"
/* Below Prometheus' default scrape_timeout (10 s), so that a slow collection gives the last answer
 * rather than a failed scrape. */
#define SERVE_TIMEOUT_DEFAULT 8.0
/* An idle or trickling connection is closed after this many seconds (slowloris). */
#define SERVE_IDLE_S 10
/* Each connection has its own thread, which only copies a finished answer: a small stack will do,
 * and keeps 1,000 concurrent scrapes cheap. */
#define SERVE_STACK_BYTES (256u * 1024u)
/* Each connection's memory pool. Above 32 KiB libmicrohttpd maps it with mmap and unmaps it when
 * the connection ends; at or below, it comes from malloc, where a thousand concurrent connections
 * leave the per-thread arenas fragmented and the RSS creeping up burst after burst (measured:
 * +2-4 MiB per 1,000 scrapes, no leak under LeakSanitizer). */
#define SERVE_CONN_POOL_BYTES (64u * 1024u)

static const char usage[] =
	"Usage: gpuwho serve [OPTIONS]\n"
	"\n"
	"Answers Prometheus over HTTP: /metrics is gpuwho metrics (collected when scraped), /healthz is\n"
	"\"ok\" while the server runs. One collection runs at a time; a scrape that arrives while one runs\n"
	"gets the last answer at once (header X-Gpuwho-Cache: hit); a scrape waits for its collection at\n"
	"most the scrape timeout (or Prometheus' X-Prometheus-Scrape-Timeout-Seconds, when smaller), then\n"
	"gets the last answer (X-Gpuwho-Cache: stale), or 503 before the first one. Listens on the\n"
	"loopback only unless --listen names another address. SIGTERM or SIGINT stop it cleanly.\n"
	"\n"
	"Options:\n"
	"  --listen ADDR:PORT    where to listen (default " SERVE_LISTEN_DEFAULT "; [::1]:9835 for IPv6;\n"
	"                        0.0.0.0:9835 for every address — mind who can then read process names)\n"
	"  --scrape-timeout S    seconds a scrape waits for its collection (default 8)\n"
	"  --max-processes N     at most N gpuwho_process_gpu_memory_bytes series per GPU (default 16)\n"
	"  --scan-interval S     a scrape walks every process's fds only when NVML shows memory it cannot\n"
	"                        tie to a listed process, and then at most every S seconds (default 60;\n"
	"                        0: each time); in between such answers say gpuwho_scan_limited 1\n"
	"  --from FILE           serve a snapshot (gpuwho snapshot -o FILE) instead of this host\n"
	"  --nvml PATH           load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml             do not ask NVML (no memory series)\n"
	"  -h, --help            this text\n"
	"\n"
	"Examples:\n"
	"  gpuwho serve                              then: curl -s 127.0.0.1:9835/metrics\n"
	"  gpuwho serve --listen 10.0.0.7:9835       for a Prometheus on another host (this node's address)\n"
	"\n"
	"Exit status: 0 stopped by SIGTERM/SIGINT, 2 bad usage, 3 cannot listen.\n";

#define SERVE_SCAN_INTERVAL_DEFAULT 60.0

enum { OPT_LISTEN = 1, OPT_TIMEOUT, OPT_MAX_PROCESSES, OPT_SCAN_INTERVAL };

struct sopts {
	const char *listen;
	double timeout_s;
	struct scrape_opts scrape;
};

/* What the collector and the connection threads share, under mu. */
struct server {
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* CLOCK_MONOTONIC: a scrape's wait must not jump with the wall clock */
	bool want;                /* a scrape asked for a collection */
	bool collecting;
	bool stopping;
	unsigned long long gen;   /* collections finished */
	char *body;               /* the last answer (NULL before the first) */
	size_t len;
	const struct cli *c;
	struct sopts o;
	struct scrape_state st;   /* the collector's own */
};

static int on_opt(int opt, const char *arg, void *ctx)
{
	struct sopts *o = ctx;
	unsigned long long n;
	char *end;
	switch (opt) {
	case OPT_LISTEN:
		o->listen = arg;
		return 0;
	case OPT_TIMEOUT:
		o->timeout_s = strtod(arg, &end);
		if (end == arg || *end || !(o->timeout_s >= 0.1 && o->timeout_s <= 600)) {
			fprintf(stderr, "gpuwho serve: --scrape-timeout wants seconds from 0.1 to 600, not '%s'\n", arg);
			return -1;
		}
		return 0;
	case OPT_MAX_PROCESSES:
		if (!parse_uint(arg, &n) || n > 10000) {
			fprintf(stderr, "gpuwho serve: --max-processes wants a number from 0 to 10000, not '%s'\n", arg);
			return -1;
		}
		o->scrape.max_processes = (unsigned)n;
		return 0;
	case OPT_SCAN_INTERVAL:
		o->scrape.scan_interval_s = strtod(arg, &end);
		if (end == arg || *end || !(o->scrape.scan_interval_s >= 0 && o->scrape.scan_interval_s <= 86400)) {
			fprintf(stderr, "gpuwho serve: --scan-interval wants seconds from 0 to 86400, not '%s'\n", arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

/* ---------- the collector ---------- */

static void *collector(void *arg)
{
	struct server *sv = arg;
	pthread_mutex_lock(&sv->mu);
	for (;;) {
		while (!sv->want && !sv->stopping)
			pthread_cond_wait(&sv->cv, &sv->mu);
		if (sv->stopping)
			break;
		sv->want = false;
		sv->collecting = true;
		pthread_mutex_unlock(&sv->mu);
		struct scrape_result r;
		int rc = cmd_scrape(sv->c, &sv->o.scrape, &sv->st, &r);
		pthread_mutex_lock(&sv->mu);
		if (rc == 0) {
			free(sv->body);
			sv->body = r.text;
			sv->len = r.len;
		}
		sv->collecting = false;
		sv->gen++;
		pthread_cond_broadcast(&sv->cv);
	}
	pthread_mutex_unlock(&sv->mu);
	return NULL;
}

/* ---------- HTTP ---------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type, const char *body,
			       size_t len, const char *cache)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (cache)
		MHD_add_response_header(r, "X-Gpuwho-Cache", cache);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result q = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return q;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *msg)
{
	return respond(conn, status, "text/plain; charset=utf-8", msg, strlen(msg), NULL);
}

/* The seconds this scrape may wait: ours, or Prometheus' own timeout when it is smaller. */
static double scrape_budget(const struct server *sv, struct MHD_Connection *conn)
{
	double t = sv->o.timeout_s;
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Prometheus-Scrape-Timeout-Seconds");
	if (h) {
		char *end;
		double p = strtod(h, &end);
		/* Leave Prometheus a moment to receive the answer before it gives up. */
		if (end != h && p > 0.2 && p - 0.1 < t)
			t = p - 0.1;
	}
	return t;
}

static enum MHD_Result answer_metrics(struct server *sv, struct MHD_Connection *conn)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	double budget = scrape_budget(sv, conn);
	dl.tv_sec += (time_t)budget;
	dl.tv_nsec += (long)((budget - (double)(time_t)budget) * 1e9);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sv->mu);
	const char *cache = NULL;
	if (sv->collecting && sv->body) {
		cache = "hit";   /* one runs already: a second would only repeat it */
	} else {
		unsigned long long want_gen = sv->gen + 1;
		if (!sv->collecting) {
			sv->want = true;
			pthread_cond_broadcast(&sv->cv);
		}
		int e = 0;
		while (sv->gen < want_gen && !sv->stopping && e != ETIMEDOUT)
			e = pthread_cond_timedwait(&sv->cv, &sv->mu, &dl);
		if (sv->gen < want_gen)
			cache = "stale";
	}
	if (!sv->body) {
		pthread_mutex_unlock(&sv->mu);
		return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			    sv->stopping ? "gpuwho serve: stopping\n"
					 : "gpuwho serve: the first collection has not finished within the scrape timeout\n");
	}
	/* Copied under the lock: the collector replaces body when the next collection ends. */
	struct MHD_Response *r = MHD_create_response_from_buffer(sv->len, sv->body, MHD_RESPMEM_MUST_COPY);
	pthread_mutex_unlock(&sv->mu);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
	if (cache)
		MHD_add_response_header(r, "X-Gpuwho-Cache", cache);
	enum MHD_Result q = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return q;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size, void **req)
{
	(void)version;
	(void)upload_data;
	(void)req;
	struct server *sv = cls;
	/* Whatever a client uploads is not read: the answer goes on the first call, and libmicrohttpd
	 * discards the rest with the connection. */
	*upload_data_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "gpuwho serve: only GET and HEAD\n");
	if (!strcmp(url, "/metrics"))
		return answer_metrics(sv, conn);
	if (!strcmp(url, "/healthz"))
		return text(conn, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/"))
		return text(conn, MHD_HTTP_OK, "gpuwho serve: /metrics (Prometheus text), /healthz\n");
	return text(conn, MHD_HTTP_NOT_FOUND, "gpuwho serve: not found (try /metrics or /healthz)\n");
}

/* ---------- listening ---------- */

/* Splits "ADDR:PORT", "[V6ADDR]:PORT" or "PORT" (the loopback) into host and port (malloc'ed).
 * False for anything else, ":PORT" included: every address is 0.0.0.0 or [::], said out loud. */
static bool split_listen(const char *s, char **host, char **port)
{
	const char *colon;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' || close == s + 1)
			return false;
		*host = xstrndup(s + 1, (size_t)(close - s - 1));
		colon = close + 1;
	} else if ((colon = strrchr(s, ':'))) {
		if (colon == s || memchr(s, ':', (size_t)(colon - s)))
			return false;   /* ":9835", or a bare IPv6 address without brackets */
		*host = xstrndup(s, (size_t)(colon - s));
	} else {
		*host = xstrdup("127.0.0.1");
		colon = s - 1;
	}
	unsigned long long p;
	if (!parse_uint(colon + 1, &p) || p == 0 || p > 65535) {
		free(*host);
		*host = NULL;
		return false;
	}
	*port = xstrdup(colon + 1);
	return true;
}

/* A listening TCP socket on host:port, or -1 with *err set (malloc'ed). */
static int listen_on(const char *host, const char *port, char **err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int g = getaddrinfo(host, port, &hints, &ai);
	if (g != 0) {
		*err = xasprintf("cannot resolve %s: %s", host, gai_strerror(g));
		return -1;
	}
	int fd = -1, e = 0;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (a->ai_family == AF_INET6)   /* [::] means IPv6; 0.0.0.0 is asked for apart */
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		/* A deep backlog: a thousand scrapers connecting at once must queue, not be refused. */
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 4096) < 0) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		*err = xasprintf("cannot listen on %s:%s: %s", host, port, strerror(e));
	return fd;
}

/* Every connection holds a descriptor: raise the soft limit to the hard one (at most 65,536) and
 * return how many connections that leaves room for. */
static unsigned connection_room(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 512;
	rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
	if (rl.rlim_cur < want) {
		rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Room for the collection's own descriptors (the holder engine's threads, NVML). */
	return rl.rlim_cur > 256 ? (unsigned)(rl.rlim_cur - 128) : 128;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option own[] = {
		{"listen", required_argument, NULL, OPT_LISTEN},
		{"scrape-timeout", required_argument, NULL, OPT_TIMEOUT},
		{"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
		{"scan-interval", required_argument, NULL, OPT_SCAN_INTERVAL},
		{0},
	};
	struct cli c = {.cmd = "serve"};
	struct sopts o = {.listen = SERVE_LISTEN_DEFAULT, .timeout_s = SERVE_TIMEOUT_DEFAULT,
			  .scrape = {.max_processes = METRICS_MAX_PROCESSES_DEFAULT,
				     .scan_interval_s = SERVE_SCAN_INTERVAL_DEFAULT}};
	int r = cli_parse(&c, argc, argv, "", own, on_opt, &o, usage);
	if (r < 0)
		return cli_exit_for(r);
	if (r < argc) {
		cli_error(&c, "takes no arguments (did you mean --listen %s?)", argv[r]);
		return EXIT_USAGE;
	}
	if (c.json) {
		cli_error(&c, "--json: /metrics is Prometheus text (gpuwho why --json for findings as JSON)");
		return EXIT_USAGE;
	}
	char *host = NULL, *port = NULL, *err = NULL;
	if (!split_listen(o.listen, &host, &port)) {
		cli_error(&c, "--listen wants ADDR:PORT, [IPV6]:PORT or PORT (the loopback), not '%s'; every address is "
			  "0.0.0.0:PORT or [::]:PORT", o.listen);
		return EXIT_USAGE;
	}
	int lfd = listen_on(host, port, &err);
	if (lfd < 0) {
		cli_error(&c, "%s", err);
		free(err);
		free(host);
		free(port);
		return EXIT_CANNOT;
	}

	/* Signals are taken by sigwait below, not by whichever thread they land on: block them before
	 * any thread starts, so every thread inherits the mask. A client that hangs up must not kill
	 * the server (main sets SIGPIPE to its default for the pipelines of other commands). */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct server sv = {.c = &c, .o = o};
	pthread_mutex_init(&sv.mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sv.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_t col;
	if (pthread_create(&col, NULL, collector, &sv) != 0) {
		cli_error(&c, "cannot start the collector thread");
		close(lfd);
		free(host);
		free(port);
		return EXIT_CANNOT;
	}
	unsigned room = connection_room();
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC, 0, NULL, NULL,
		on_request, &sv, MHD_OPTION_LISTEN_SOCKET, lfd, MHD_OPTION_CONNECTION_LIMIT, room,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_IDLE_S, MHD_OPTION_THREAD_STACK_SIZE,
		(size_t)SERVE_STACK_BYTES, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_CONN_POOL_BYTES, MHD_OPTION_END);
	int code = EXIT_FINE;
	if (!d) {
		cli_error(&c, "cannot start the HTTP server (libmicrohttpd) on %s", o.listen);
		close(lfd);
		code = EXIT_CANNOT;
	} else {
		fprintf(stderr, "gpuwho serve: listening on http://%s%s%s:%s/metrics\n", strchr(host, ':') ? "[" : "", host,
			strchr(host, ':') ? "]" : "", port);
		int sig = 0;
		while (sigwait(&stop, &sig) != 0)
			;
		fprintf(stderr, "gpuwho serve: %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	}
	/* Waiting scrapes return at once (with the last answer, or 503), then the daemon's threads end,
	 * then the collector, after the collection it may be in. */
	pthread_mutex_lock(&sv.mu);
	sv.stopping = true;
	pthread_cond_broadcast(&sv.cv);
	pthread_mutex_unlock(&sv.mu);
	if (d)
		MHD_stop_daemon(d);   /* closes lfd too */
	pthread_join(col, NULL);
	pthread_cond_destroy(&sv.cv);
	pthread_mutex_destroy(&sv.mu);
	free(sv.body);
	free(host);
	free(port);
	return code;
}
#endif
