/*
 * station_cfg.c - reads /etc/station.conf on the field controller.
 *
 * Format: one "key = value" per line, '#' starts a comment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "station_cfg.h"
#include "log.h"

#define CFG_LINE_MAX 256

static char *trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t') {
        s++;
    }
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) {
        *--end = '\0';
    }
    return s;
}

static int apply(struct station_cfg *cfg, const char *key, const char *value)
{
    if (strcmp(key, "station_id") == 0) {
        cfg->station_id = (unsigned)strtoul(value, NULL, 10);
    } else if (strcmp(key, "poll_interval_ms") == 0) {
        cfg->poll_interval_ms = (unsigned)strtoul(value, NULL, 10);
    } else if (strcmp(key, "modbus_port") == 0) {
        snprintf(cfg->modbus_port, sizeof(cfg->modbus_port), "%s", value);
    } else {
        return -1;
    }
    return 0;
}

int station_cfg_load(const char *path, struct station_cfg *cfg)
{
    char line[CFG_LINE_MAX];
    unsigned lineno = 0;
    FILE *fp;

    fp = fopen(path, "r");
    if (fp == NULL) {
        log_error("cfg: open %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), fp) != NULL) {
        char *key = trim(line);
        char *eq;

        lineno++;
        if (*key == '\0' || *key == '#') {
            continue;
        }
        eq = strchr(key, '=');
        if (eq == NULL) {
            log_error("cfg: %s:%u: expected key = value", path, lineno);
            return -1;
        }
        *eq = '\0';
        if (apply(cfg, trim(key), trim(eq + 1)) != 0) {
            log_warn("cfg: %s:%u: unknown key %s, ignored", path, lineno, trim(key));
        }
    }
    fclose(fp);
    return 0;
}
