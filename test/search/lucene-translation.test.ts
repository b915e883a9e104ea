/**
 * The Lucene regexps sent to Elasticsearch, checked with Lucene 9's grammar (the stand-in's
 * parser, test/support/lucene-regexp.ts) over a fixed corpus of user patterns: every translation
 * must parse, fit `index.max_regex_length` (or be declined, never sent), and match every value
 * the source of truth's RE2 evaluation matches (a superset), with Lucene's own semantics. The
 * corpus is then sent through the adapter: to the stand-in always, to a real cluster when
 * ELASTICSEARCH_URL is set (there Lucene itself parses every regexp).
 */
import fs from 'node:fs';
import { Client } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { ElasticsearchIndex } from '../../search/elasticsearch/elasticsearch-index.ts';
import { ElasticsearchStandIn } from '../support/elasticsearch-stand-in.ts';
import { MAX_REGEX_LENGTH, PATH_SEPARATOR, queryOf } from '../../search/elasticsearch/mapping.ts';
import type { IndexablePredicate } from '../../search/port.ts';
import { compileFilter } from '../../src/store/filter.ts';
import { compileLuceneRegexp, parseLuceneRegexp } from '../support/lucene-regexp.ts';

const corpus = JSON.parse(
  fs.readFileSync(new URL('../fixtures/regex/user-patterns.json', import.meta.url), 'utf8'),
) as { patterns: Array<{ pattern: string; options: string }>; values: string[] };

const PATHS = ['name', 'env_broad_scale.term.name'];

interface Sent {
  value: string;
  caseInsensitive: boolean;
}

function sentRegexp(predicate: IndexablePredicate): Sent | null {
  const query = queryOf(predicate) as { regexp?: { values: { value: string; case_insensitive: boolean } } };
  if (query === null) return null;
  return { value: query.regexp!.values.value, caseInsensitive: query.regexp!.values.case_insensitive };
}

/** Every predicate of the corpus: each pattern on each path, and each value as a `.search` text. */
function predicates(): IndexablePredicate[] {
  const out: IndexablePredicate[] = [];
  for (const path of PATHS) {
    for (const { pattern, options } of corpus.patterns)
      out.push({ kind: 'regex', path, pattern, flags: options });
    for (const text of corpus.values) out.push({ kind: 'search', path, text });
  }
  return out;
}

/** The source of truth's verdict, or undefined for a pattern it refuses (lookarounds, ...). */
function sourceOfTruth(predicate: IndexablePredicate): ((value: string) => boolean) | undefined {
  const filter =
    predicate.kind === 'regex'
      ? { [predicate.path]: { $regex: predicate.pattern, $options: predicate.flags } }
      : {
          [predicate.path]: {
            $regex: (predicate as { text: string }).text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
            $options: 'i',
          },
        };
  try {
    const test = compileFilter(filter);
    const [head, ...rest] = predicate.path.split('.');
    const docOf = (value: string): Record<string, unknown> => {
      let inner: unknown = value;
      for (const segment of [...rest].reverse()) inner = { [segment]: inner };
      return { id: 'x', [head!]: inner };
    };
    return (value) => test(docOf(value));
  } catch {
    return undefined;
  }
}

describe('Lucene regexps of user patterns', () => {
  const all = predicates();

  it('parse with Lucene 9 grammar and fit index.max_regex_length, or are not sent', () => {
    const refused: string[] = [];
    let sent = 0;
    for (const p of all) {
      const regexp = sentRegexp(p);
      if (regexp === null) continue;
      sent++;
      try {
        parseLuceneRegexp(regexp.value, regexp.caseInsensitive);
      } catch (err) {
        refused.push(`${JSON.stringify(p)} -> ${JSON.stringify(regexp.value)}: ${(err as Error).message}`);
      }
      if (regexp.value.length > MAX_REGEX_LENGTH)
        refused.push(`${JSON.stringify(p)}: ${regexp.value.length} characters`);
    }
    expect(refused).toEqual([]);
    // Most of the corpus narrows: declining is the exception.
    expect(sent).toBeGreaterThan(all.length * 0.8);
  });

  it('match every value the source of truth matches, with Lucene semantics', () => {
    const missed: string[] = [];
    for (const p of all) {
      const regexp = sentRegexp(p);
      const truth = sourceOfTruth(p);
      if (regexp === null || truth === undefined) continue;
      const lucene = compileLuceneRegexp(regexp.value, regexp.caseInsensitive);
      for (const value of corpus.values) {
        if (truth(value) && !lucene.matches(`${p.path}${PATH_SEPARATOR}${value}`))
          missed.push(
            `${JSON.stringify(p)} misses ${JSON.stringify(value)} (sent ${JSON.stringify(regexp.value)})`,
          );
      }
    }
    expect(missed).toEqual([]);
  });

  it('spell out whitespace and control characters as themselves, never as a backslash and a letter', () => {
    expect(sentRegexp({ kind: 'regex', path: 'name', pattern: 'soil\\s+core', flags: '' })!.value).toBe(
      `name(\\..*)?${PATH_SEPARATOR}(.*soil([\t\n\f\r ])+core.*)`,
    );
    expect(sentRegexp({ kind: 'regex', path: 'name', pattern: 'a\\tb\\n', flags: '' })!.value).toBe(
      `name(\\..*)?${PATH_SEPARATOR}(.*a\tb\n.*)`,
    );
    expect(sentRegexp({ kind: 'regex', path: 'name', pattern: '\\S+@\\d', flags: '' })!.value).toBe(
      `name(\\..*)?${PATH_SEPARATOR}(.*([^\t\n\f\r ])+\\@\\d.*)`,
    );
  });

  it('declines translations longer than index.max_regex_length instead of sending them', () => {
    const long = { kind: 'regex', path: 'name', pattern: '\\s'.repeat(200), flags: '' } as const;
    expect(queryOf(long)).toBeNull();
    expect(queryOf({ kind: 'regex', path: 'name', pattern: 'x'.repeat(990), flags: '' })).toBeNull();
    expect(queryOf({ kind: 'regex', path: 'name', pattern: 'x'.repeat(900), flags: '' })).not.toBeNull();
  });
});

/**
 * Sends every predicate of the corpus through the adapter over records holding the corpus values:
 * none may be refused by Elasticsearch, and each answer must hold every record the source of truth
 * matches.
 */
async function sendCorpus(es: ElasticsearchIndex): Promise<{ narrowed: number; missed: string[] }> {
  const C = 'biosample_set';
  const docs = corpus.values.map((value, i) => ({
    id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
    name: value,
    env_broad_scale: { term: { name: value } },
  }));
  await es.index(C, docs);
  await es.refresh();
  let narrowed = 0;
  const missed: string[] = [];
  for (const p of predicates()) {
    const found = await es.candidates(C, p, 1000);
    const truth = sourceOfTruth(p);
    if (found.all || truth === undefined) continue;
    narrowed++;
    for (const d of docs)
      if (truth(d.name) && !found.ids.has(d.id))
        missed.push(`${JSON.stringify(p)} misses ${JSON.stringify(d.name)}`);
  }
  return { narrowed, missed };
}

describe('the corpus sent to Elasticsearch', () => {
  it('is accepted by the stand-in (Lucene 9 grammar, index.max_regex_length) and answers a superset', async () => {
    const standIn = await ElasticsearchStandIn.start();
    const es = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc');
    try {
      const { narrowed, missed } = await sendCorpus(es);
      expect(es.refusedQueries).toBe(0);
      expect(missed).toEqual([]);
      expect(narrowed).toBeGreaterThan(predicates().length * 0.8);
    } finally {
      await es.close();
      await standIn.close();
    }
  }, 30_000);

  it.skipIf(!process.env.ELASTICSEARCH_URL)(
    'is accepted by a real cluster and answers a superset',
    async () => {
      const es = await ElasticsearchIndex.connect({
        url: process.env.ELASTICSEARCH_URL!,
        prefix: `nmdc-test-corpus-${process.pid}-${Date.now()}`,
        apiKey: process.env.ELASTICSEARCH_API_KEY,
        caCert: process.env.ELASTICSEARCH_CA_CERT,
        caFingerprint: process.env.ELASTICSEARCH_CA_FINGERPRINT?.replace(/:/g, ''),
      });
      try {
        const { missed } = await sendCorpus(es);
        expect(es.refusedQueries).toBe(0);
        expect(missed).toEqual([]);
      } finally {
        await es.destroy();
        await es.close();
      }
    },
    120_000,
  );
});
