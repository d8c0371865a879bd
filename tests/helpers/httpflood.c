/* httpflood: N HTTP requests at once against 127.0.0.1:PORT, for gpuwho serve's load test.
 * Usage: httpflood PORT N PATH — opens N connections together (non-blocking connect), sends
 * "GET PATH HTTP/1.1" on each, reads every answer to its end, and prints one line:
 * "200=A 503=B other=C failed=D" (failed: refused, reset or no answer within 60 s). Exits 0 when
 * every request got an answer. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
	int fd;
	size_t sent;
	char head[16];    /* the first bytes of the answer: "HTTP/1.1 200" */
	size_t got;
	int done;         /* 0 running, 1 answered, -1 failed */
};

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: httpflood PORT N PATH\n");
		return 2;
	}
	int port = atoi(argv[1]), n = atoi(argv[2]);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	char req[512];
	int rlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", argv[3]);
	struct conn *c = calloc((size_t)n, sizeof *c);
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	for (int i = 0; i < n; i++) {
		c[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c[i].fd < 0 || (connect(c[i].fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS))
			c[i].done = -1;
	}
	time_t end = time(NULL) + 60;
	for (;;) {
		int live = 0;
		for (int i = 0; i < n; i++) {
			p[i].fd = c[i].done ? -1 : c[i].fd;
			p[i].events = c[i].sent < (size_t)rlen ? POLLOUT : POLLIN;
			live += !c[i].done;
		}
		if (!live || time(NULL) > end)
			break;
		if (poll(p, (nfds_t)n, 1000) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (c[i].done || !p[i].revents)
				continue;
			if (c[i].sent < (size_t)rlen) {
				ssize_t w = send(c[i].fd, req + c[i].sent, (size_t)rlen - c[i].sent, MSG_NOSIGNAL);
				if (w > 0)
					c[i].sent += (size_t)w;
				else if (w < 0 && errno != EAGAIN)
					c[i].done = -1;
				continue;
			}
			char buf[65536];
			ssize_t r = recv(c[i].fd, buf, sizeof buf, 0);
			if (r > 0) {
				size_t k = (size_t)r < sizeof c[i].head - 1 - c[i].got ? (size_t)r : sizeof c[i].head - 1 - c[i].got;
				memcpy(c[i].head + c[i].got, buf, k);
				c[i].got += k;
			} else if (r == 0) {
				c[i].done = c[i].got >= 12 ? 1 : -1;
			} else if (errno != EAGAIN) {
				c[i].done = -1;
			}
		}
	}
	int ok200 = 0, s503 = 0, other = 0, failed = 0;
	for (int i = 0; i < n; i++) {
		if (c[i].done != 1)
			failed++;
		else if (!strncmp(c[i].head + 9, "200", 3))
			ok200++;
		else if (!strncmp(c[i].head + 9, "503", 3))
			s503++;
		else
			other++;
		if (c[i].fd >= 0)
			close(c[i].fd);
	}
	printf("200=%d 503=%d other=%d failed=%d\n", ok200, s503, other, failed);
	free(c);
	free(p);
	return failed ? 1 : 0;
}
