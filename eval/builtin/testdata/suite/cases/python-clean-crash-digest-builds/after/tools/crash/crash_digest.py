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
    builds = collections.defaultdict(set)
    for sig, build in rows:
        builds[sig].add(build)
    return [(sig, n, sorted(builds[sig])) for sig, n in counts.most_common(limit)]


def render(day, top):
    lines = [f"Top crashes for {day:%Y-%m-%d}", ""]
    for rank, (sig, n, builds) in enumerate(top, start=1):
        shown = ", ".join(builds[-3:])
        more = f" (+{len(builds) - 3} older)" if len(builds) > 3 else ""
        lines.append(f"{rank:>2}. {n:>6}  {sig}  [{shown}{more}]")
    return "\n".join(lines)


def parse_day(text):
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--day", type=parse_day, help="report this day instead of yesterday")
    args = ap.parse_args()
    day = args.day or dt.date.today() - dt.timedelta(days=1)
    print(render(day, top_signatures(args.db, day, args.limit)))


if __name__ == "__main__":
    main()
