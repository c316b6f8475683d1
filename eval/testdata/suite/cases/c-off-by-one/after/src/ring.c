#include <stddef.h>

#define CAP 16

static int buf[CAP];

void ring_clear(void)
{
	for (size_t i = 0; i <= CAP; i++)
		buf[i] = 0;
}
