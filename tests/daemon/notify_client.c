/*
 * notify_client.c - a program that receives triggers' notifications
 * through the public C API (<ringtrace/notification.h>), for
 * test_triggers.py:
 *   notify_client COUNT [TRIGGER...]
 * subscribes to TRIGGERs (none: all), prints "subscribed" once the
 * daemon accepted, then each of COUNT notifications as one line of
 * tab-separated key=value entries (in their order), and exits 0. It
 * exits 1 with the API's message when open or read fails, and 3 when a
 * read waits more than 60 s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/notification.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: notify_client COUNT [TRIGGER...]\n");
		return 2;
	}
	long count = strtol(argv[1], NULL, 10);
	struct rt_notification_channel *ch;
	char err[256];
	int r = rt_notification_channel_open((const char *const *)argv + 2, (size_t)argc - 2,
					     &ch, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "open: %s (%s)\n", err, strerror(-r));
		return 1;
	}
	printf("subscribed\n");
	fflush(stdout);
	int status = 0;
	for (long i = 0; i < count && !status; i++) {
		struct rt_notification *n;
		r = rt_notification_channel_read(ch, 60000, &n);
		if (r == -ETIMEDOUT) {
			fprintf(stderr, "read: nothing within 60 s\n");
			status = 3;
			break;
		}
		if (r < 0) {
			fprintf(stderr, "read: %s\n", strerror(-r));
			status = 1;
			break;
		}
		size_t pos = 0;
		const char *k, *v;
		const char *sep = "";
		while (rt_notification_next(n, &pos, &k, &v)) {
			printf("%s%s=%s", sep, k, v);
			sep = "\t";
		}
		printf("\n");
		fflush(stdout);
		if (strcmp(rt_notification_trigger(n), rt_notification_get(n, "trigger")))
			status = 4;
		rt_notification_free(n);
	}
	rt_notification_channel_close(ch);
	return status;
}
