#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "crc16.h"

/* Check value of CRC-16/CCITT-FALSE over "123456789". */
#define CHECK_VALUE 0x29B1u

static void test_check_value(void)
{
    const char *msg = "123456789";

    assert(crc16((const uint8_t *)msg, strlen(msg)) == CHECK_VALUE);
}

static void test_incremental(void)
{
    const char *msg = "123456789";
    uint16_t crc = crc16_update(0xFFFFu, (const uint8_t *)msg, 4);

    crc = crc16_update(crc, (const uint8_t *)msg + 4, 5);
    assert(crc == CHECK_VALUE);
}

static void test_frame(void)
{
    uint8_t frame[11];

    memcpy(frame, "123456789", 9);
    frame[9] = (uint8_t)(CHECK_VALUE >> 8);
    frame[10] = (uint8_t)(CHECK_VALUE & 0xFFu);
    assert(crc16_check_frame(frame, sizeof(frame)));
    frame[3] ^= 0x01u;
    assert(!crc16_check_frame(frame, sizeof(frame)));
}

int main(void)
{
    test_check_value();
    test_incremental();
    test_frame();
    puts("crc16: ok");
    return 0;
}
