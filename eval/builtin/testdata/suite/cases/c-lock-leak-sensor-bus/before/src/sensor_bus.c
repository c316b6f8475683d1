/*
 * sensor_bus.c - shared I2C bus for the environmental sensors.
 *
 * Several worker threads poll sensors on the same bus; bus_lock serialises
 * every transaction.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include "i2c_dev.h"
#include "sensor_bus.h"
#include "log.h"

static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;
static int bus_fd = -1;

int sensor_bus_open(const char *dev)
{
    pthread_mutex_lock(&bus_lock);
    bus_fd = i2c_open(dev);
    pthread_mutex_unlock(&bus_lock);
    return bus_fd < 0 ? -1 : 0;
}

int sensor_read_reg(uint8_t addr, uint8_t reg, uint8_t *buf, size_t len)
{
    int rc;

    pthread_mutex_lock(&bus_lock);
    rc = i2c_set_slave(bus_fd, addr);
    if (rc == 0) {
        rc = i2c_write_read(bus_fd, &reg, 1, buf, len);
    }
    pthread_mutex_unlock(&bus_lock);
    return rc;
}

int sensor_write_reg(uint8_t addr, uint8_t reg, uint8_t value)
{
    uint8_t frame[2] = { reg, value };
    int rc;

    pthread_mutex_lock(&bus_lock);
    rc = i2c_set_slave(bus_fd, addr);
    if (rc == 0) {
        rc = i2c_write(bus_fd, frame, sizeof(frame));
    }
    pthread_mutex_unlock(&bus_lock);
    return rc;
}

int sensor_read_humidity(uint8_t addr, uint16_t *out)
{
    uint8_t raw[2];
    int rc;

    rc = sensor_read_reg(addr, 0xE5, raw, sizeof(raw));
    if (rc != 0) {
        return rc;
    }
    *out = (uint16_t)((raw[0] << 8) | raw[1]);
    return 0;
}
