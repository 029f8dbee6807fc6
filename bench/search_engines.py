#!/usr/bin/python3
"""The other engines of `npm run bench:search`: SQLite FTS5 and Xapian, driven over the JSON Lines
bench/search.ts writes (one unit a line: its reference, its products, and its searchable text as
the unit store's tokenizer cut it, joined by spaces, so every engine indexes the same terms).

  search_engines.py check
  search_engines.py build-xapian <docs.jsonl> <db folder>
  search_engines.py build-fts5   <docs.jsonl> <db file>
  search_engines.py query-xapian <db folder> <queries.json> <passes>
  search_engines.py query-fts5   <db file>   <queries.json> <passes>

queries.json: [{"product": ..., "terms": [...]}, ...]. Each prints one JSON object on its last line.
Queries are disjunctive (OR), BM25, top 10, within the query's product (a filter term that does not
score). Needs Debian's python3-xapian and a sqlite3
module built with FTS5 (Debian's python3 has both).
"""
import json
import resource
import sys
import time


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def docs(path):
    with open(path, 'rb') as f:
        for line in f:
            yield json.loads(line)


def check():
    import sqlite3
    import xapian
    con = sqlite3.connect(':memory:')
    con.execute('CREATE VIRTUAL TABLE t USING fts5(a)')
    print(json.dumps({'xapian': xapian.version_string(), 'sqlite': sqlite3.sqlite_version}))


def build_xapian(src, db_path):
    import xapian
    t0 = time.perf_counter()
    db = xapian.WritableDatabase(db_path, xapian.DB_CREATE_OR_OVERWRITE)
    gen = xapian.TermGenerator()  # no stemmer: the terms are the unit store's tokens as given
    n = 0
    for d in docs(src):
        doc = xapian.Document()
        gen.set_document(doc)
        gen.index_text_without_positions(d['text'])
        for p in d['products']:
            doc.add_boolean_term('P' + p)
        doc.set_data(d['ref'])
        db.add_document(doc)
        n += 1
    db.commit()
    db.close()
    print(json.dumps({'docs': n, 'seconds': time.perf_counter() - t0, 'cpu_seconds': cpu_seconds(), 'peak_rss_mb': peak_rss_mb()}))


def build_fts5(src, db_path):
    import sqlite3
    t0 = time.perf_counter()
    con = sqlite3.connect(db_path)
    # contentless: the index alone (the text is not stored again); references in a plain table
    con.execute("CREATE VIRTUAL TABLE units USING fts5(text, products, content='', tokenize=\"unicode61 tokenchars '_'\")")
    con.execute('CREATE TABLE refs(id INTEGER PRIMARY KEY, ref TEXT NOT NULL)')
    n = 0
    with con:
        batch_units = []
        batch_refs = []
        for d in docs(src):
            n += 1
            batch_units.append((n, d['text'], ' '.join(p.replace('-', '_') for p in d['products'])))
            batch_refs.append((n, d['ref']))
            if len(batch_units) == 10000:
                con.executemany('INSERT INTO units(rowid, text, products) VALUES (?, ?, ?)', batch_units)
                con.executemany('INSERT INTO refs(id, ref) VALUES (?, ?)', batch_refs)
                batch_units, batch_refs = [], []
        con.executemany('INSERT INTO units(rowid, text, products) VALUES (?, ?, ?)', batch_units)
        con.executemany('INSERT INTO refs(id, ref) VALUES (?, ?)', batch_refs)
    loaded = time.perf_counter() - t0
    # merge the index segments into one, as a bulk load would before serving queries
    with con:
        con.execute("INSERT INTO units(units) VALUES ('optimize')")
    con.close()
    print(json.dumps({'docs': n, 'seconds': time.perf_counter() - t0, 'load_seconds': loaded, 'cpu_seconds': cpu_seconds(), 'peak_rss_mb': peak_rss_mb()}))


def run_queries(queries, passes, one):
    """One untimed pass, then `passes` timed passes; the refs of the first timed pass."""
    for q in queries:
        one(q)
    times = []
    tops = None
    for p in range(passes):
        got = []
        for q in queries:
            t = time.perf_counter()
            refs = one(q)
            times.append((time.perf_counter() - t) * 1000)
            got.append(refs)
        if tops is None:
            tops = got
    print(json.dumps({'ms': times, 'tops': tops, 'peak_rss_mb': peak_rss_mb()}))


def query_xapian(db_path, queries_path, passes):
    import xapian
    db = xapian.Database(db_path)
    enquire = xapian.Enquire(db)
    # k1 and b as the unit store's; k2 0, k3 1 (Xapian's defaults); no clamping of short lengths
    enquire.set_weighting_scheme(xapian.BM25Weight(1.2, 0, 1, 0.75, 0))
    queries = json.load(open(queries_path))

    def one(query):
        q = xapian.Query(xapian.Query.OP_OR, [xapian.Query(t) for t in query['terms']])
        enquire.set_query(xapian.Query(xapian.Query.OP_FILTER, q, xapian.Query('P' + query['product'])))
        return [m.document.get_data().decode() for m in enquire.get_mset(0, 10)]

    run_queries(queries, passes, one)


def query_fts5(db_path, queries_path, passes):
    import sqlite3
    con = sqlite3.connect(db_path)
    queries = json.load(open(queries_path))
    # bm25() is lower for better matches; the products column weighs 0, so the filter does not score
    sql = ('SELECT refs.ref FROM (SELECT rowid, bm25(units, 1.0, 0.0) AS score FROM units WHERE units MATCH ? '
           'ORDER BY score, rowid LIMIT 10) AS top JOIN refs ON refs.id = top.rowid ORDER BY top.score, top.rowid')

    def one(query):
        only = query['product'].replace('-', '_')
        match = '{text}: (' + ' OR '.join('"%s"' % t for t in query['terms']) + ') AND {products}: "%s"' % only
        return [r[0] for r in con.execute(sql, (match,)).fetchall()]

    run_queries(queries, passes, one)


if __name__ == '__main__':
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'check':
        check()
    elif cmd == 'build-xapian':
        build_xapian(*args)
    elif cmd == 'build-fts5':
        build_fts5(*args)
    elif cmd == 'query-xapian':
        query_xapian(args[0], args[1], int(args[2]))
    elif cmd == 'query-fts5':
        query_fts5(args[0], args[1], int(args[2]))
    else:
        sys.exit('unknown command ' + cmd)
