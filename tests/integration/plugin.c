/* plugin.c - a shared library with its own events, loaded with dlopen by
 * dlhost.c while recording. */
#include <ringtrace/ringtrace.h>

__attribute__((visibility("default"))) void plugin_work(int round);
void plugin_work(int round)
{
	for (int i = 0; i < 10; i++)
		rt_event(plugin, work, round, round, i, i, name, "plugin");
}
