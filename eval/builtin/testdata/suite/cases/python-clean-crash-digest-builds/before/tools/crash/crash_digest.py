#!/usr/bin/env python3
# crash_digest.py - daily e-mail of the top crash signatures from the
# crash database, sent to the engine and gameplay leads.

import argparse
import collections
import datetime as dt
import sqlite3


def top_signatures(db_path, day, limit):
    start = dt.datetime.combine(day, dt.time.min)
    end = start + dt.timedelta(days=1)
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute(
            "SELECT signature, build FROM crashes WHERE reported_at >= ? AND reported_at < ?",
            (start.isoformat(), end.isoformat()),
        ).fetchall()
    counts = collections.Counter(sig for sig, _ in rows)
    return counts.most_common(limit)


def render(day, top):
    lines = [f"Top crashes for {day:%Y-%m-%d}", ""]
    for rank, (sig, n) in enumerate(top, start=1):
        lines.append(f"{rank:>2}. {n:>6}  {sig}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--limit", type=int, default=20)
    args = ap.parse_args()
    day = dt.date.today() - dt.timedelta(days=1)
    print(render(day, top_signatures(args.db, day, args.limit)))


if __name__ == "__main__":
    main()
