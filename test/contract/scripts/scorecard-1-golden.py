"""The golden scorings of the contract suite, computed from the published scoring model alone.

Implements the current model, scorecard-2, from openapi/guides/scoring-model.md (the formulas, Explain
ranked and marked on attributions rounded to 6 decimals, the Reasons by points below maximum with their
codes and English statements, the policies' effective weights), independently of packages/engine, for the
inputs the contract suite sends, and prints test/contract/src/harness/scoring-golden.ts. The suite compares
the server's answers with those literals, so a change of the engine's scoring fails it unless the page (and
this script) change too. (The file keeps its first name: it began with scorecard-1, whose only differences
are the unrounded Explain ranking and no Reasons.)

    python3 test/contract/scripts/scorecard-1-golden.py > test/contract/src/harness/scoring-golden.ts
    npx biome format --write test/contract/src/harness/scoring-golden.ts
"""
import json, math

Z = 1.2815515655446004
FACTORS = [  # key, name, goodness, actionable, direction, step, (min,max)
    ('on_time_ratio', 'payment_history', lambda v: (v - 0.8) / 0.2, True, '+', 0.02, (0, 1)),
    ('utilization', 'utilization', lambda v: 1 - v / 0.9, True, '-', 0.09, (0, 10)),
    ('history_months', 'history_length', lambda v: v / 120, False, None, None, (0, 1200)),
    ('debt_to_income', 'debt_to_income', lambda v: 1 - v / 0.6, True, '-', 0.06, (0, 10)),
    ('inquiries_12m', 'recent_inquiries', lambda v: 1 - v / 6, True, '-', 1, (0, math.inf)),
]
DEFAULT_W = {'payment_history': 350, 'utilization': 300, 'history_length': 150, 'debt_to_income': 100, 'recent_inquiries': 100}
def share(w):
    s = sum(w[n] for _, n, *r in FACTORS)
    return {n: w[n] * 1000 / s for _, n, *r in FACTORS}
POLICIES = {
    'default': dict(weights=share(DEFAULT_W), review_threshold=550, max_band=250),
    'DE': dict(weights=share({**DEFAULT_W, 'recent_inquiries': 0}), review_threshold=550, max_band=250),
    'US': dict(weights=share(DEFAULT_W), review_threshold=600, max_band=250),
    'US-CA': dict(weights=share({**DEFAULT_W, 'payment_history': 400, 'utilization': 250}), review_threshold=600, max_band=200),
}
def policy_id(j):
    return j if j in POLICIES else j[:2] if j[:2] in POLICIES else 'default'

def js_round(x):
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f
def clamp(x, lo, hi): return min(hi, max(lo, x))
def to_score(raw): return js_round(clamp(raw, 0, 1000) * 10) / 10

def marker(a):
    if a <= -75: return '⇊'
    if a <= -15: return '↓'
    if a < 15: return '≈'
    if a < 75: return '↑'
    return '⇈'

# The page's Reasons table: factor -> (code prefix, statement when present, statement when missing), in English.
REASONS = {
    'payment_history': ('PH', 'Too few payments were made on time', 'Not enough information about payment history'),
    'utilization': ('UT', 'Too much of the available credit is in use', 'Not enough information about credit in use'),
    'history_length': ('HL', 'The credit history is too short', 'Not enough information about the length of credit history'),
    'debt_to_income': ('DI', 'Debt is too high relative to income', 'Not enough information about debt and income'),
    'recent_inquiries': ('RI', 'Too many recent applications for credit', 'Not enough information about recent applications for credit'),
}


def micro(v):
    """A value rounded to 6 decimal places, as an integer of millionths (Math.round(v * 1e6))."""
    return js_round(v * 1e6)


def reasons(fs, levers):
    """Points below maximum on p50: d = w·(1 − x), ranked on d rounded to 6 decimals, ties by name; four, then inquiries."""
    ds = [(f['name'], f['w'] * (1 - f['x']), f['present']) for f in fs]  # fs has only weights > 0
    ranked = sorted([d for d in ds if micro(d[1]) > 0], key=lambda d: (-micro(d[1]), d[0]))
    chosen = ranked[:4] + [d for d in ranked[4:] if d[0] == 'recent_inquiries']
    lever_names = {l['name'] for l in levers}
    out = []
    for rank, (name, d, present) in enumerate(chosen, 1):
        prefix, low, missing = REASONS[name]
        reason = {'code': prefix + ('1' if present else '0'), 'factor': name, 'rank': rank,
                  'points_below_max': js_round(d * 10) / 10, 'statement': low if present else missing}
        if name in lever_names:
            reason['lever'] = name
        out.append(reason)
    return out


def score(context):
    w = POLICIES[policy_id(context['jurisdiction'])]['weights']
    fs = []
    for key, name, g, act, d, step, rng in FACTORS:
        if w[name] == 0: continue  # a disabled factor takes no part
        present = key in context
        x = clamp(g(context[key]), 0, 1) if present else 0.5
        fs.append(dict(key=key, name=name, g=g, act=act, d=d, step=step, rng=rng, w=w[name], x=x,
                       s=0.05 if present else 0.25, present=present))
    mu = 0.0
    for f in fs: mu += f['w'] * f['x']
    var = 0.0
    for f in fs: var += (f['w'] * f['s']) ** 2
    sd = math.sqrt(var)
    scen = []
    for q, z in (('p10', -Z), ('p50', 0.0), ('p90', Z)):
        raw = mu + z * sd
        att = [(f['name'], f['w'] * (f['x'] + z * f['w'] * f['s'] ** 2 / sd - 0.5)) for f in fs]
        assert abs(sum(a for _, a in att) - (raw - 500)) < 1e-9
        # scorecard-2: ranked and marked on the attributions rounded to 6 decimal places.
        att = [(n, micro(a) / 1e6) for n, a in att]
        att.sort(key=lambda na: (-abs(na[1]), na[0]))
        scen.append({'name': q, 'score': to_score(raw), 'explain': [f'factor:{n}{marker(a)}' for n, a in att[:4]]})
    p50 = scen[1]['score']
    levers = []
    for i, f in enumerate(fs):
        if not f['act'] or not f['present'] or f['x'] >= 1: continue
        v = context[f['key']]
        moved = clamp(v + f['step'] if f['d'] == '+' else v - f['step'], *f['rng'])
        xa = clamp(f['g'](moved), 0, 1)
        mu2 = 0.0
        for j, h in enumerate(fs): mu2 += h['w'] * (xa if j == i else h['x'])
        delta = js_round((to_score(mu2) - p50) * 10) / 10
        step = js_round(abs(moved - v) * 1e6) / 1e6
        if delta <= 0 or step <= 0: continue
        levers.append({'name': f['name'], 'direction': f['d'], 'delta': delta, 'step': step})
    levers.sort(key=lambda l: (-l['delta'], l['name']))
    levers = levers[:3]
    return {'scenarios': scen, 'levers': levers, 'reasons': reasons(fs, levers)}, mu, sd

POLICY_VERSION = '2026-11-01'


def js_number(v):
    """A number as JavaScript (and so RFC 8785) writes it, for the inputs and results used here."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v)


def canonical(v):
    """RFC 8785 canonical JSON of plain data: keys in code-unit order, numbers as JavaScript writes them."""
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode('utf-16-be'))
        return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + canonical(v[k]) for k in keys) + '}'
    if isinstance(v, list):
        return '[' + ','.join(canonical(i) for i in v) + ']'
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return js_number(v)
    return json.dumps(v, ensure_ascii=False)


FULL = {'jurisdiction': 'DE', 'on_time_ratio': 0.96, 'utilization': 0.35, 'history_months': 84,
        'debt_to_income': 0.28, 'inquiries_12m': 2}
INPUTS = ['on_time_ratio', 'utilization', 'history_months', 'debt_to_income', 'inquiries_12m']
# (what the case is, subject, context), in the order the tests send them.
CASES = [('the FullFile example (the worked example of the page)', 'applicant-8841', FULL),
         ('the ThinFile example', 'applicant-0001', {'jurisdiction': 'US-CA'})]
CASES += [(f'the full file without {i}', 'without-input', {k: v for k, v in FULL.items() if k != i})
          for i in INPUTS]
CASES += [(f'DE with only {i}', 'only-input', {'jurisdiction': 'DE', i: FULL[i]}) for i in INPUTS]
CASES += [(f'DE with {k} at {v}', 'edge', {'jurisdiction': 'DE', k: v}) for k, v in [
    ('on_time_ratio', 0), ('on_time_ratio', 1), ('utilization', 0), ('utilization', 10),
    ('history_months', 0), ('history_months', 1200), ('debt_to_income', 0), ('debt_to_income', 10),
    ('inquiries_12m', 0), ('inquiries_12m', 100), ('history_months', 84.0)]]
CASES += [('FR without inputs, an unusual subject', s, {'jurisdiction': 'FR'})
          for s in ['a', 's' * 256, 'zoë-ünïcødé-申请人-🧾']]
CASES += [('FR with on_time_ratio 0.9: a float tie at 0, ranked by name in scorecard-2', 'tie',
           {'jurisdiction': 'FR', 'on_time_ratio': 0.9}),
          ('FR with history_months 72: an attribution of exactly 15, marked up', 'fifteen',
           {'jurisdiction': 'FR', 'history_months': 72}),
          ('FR with one inquiry and every input present: inquiries as the fifth reason', 'inquiries',
           {'jurisdiction': 'FR', 'on_time_ratio': 0.9, 'utilization': 0.5, 'history_months': 60,
            'debt_to_income': 0.3, 'inquiries_12m': 1})]
CASES += [(f'{j} (policy {policy_id(j)}) with utilization 0.5', 'policy', {'jurisdiction': j, 'utilization': 0.5})
          for j in ['US', 'US-NY', 'US-CA', 'GB', 'DE', 'FR-75C', 'CN-BJ']]


def ts(v):
    """A literal as TypeScript source (biome formats it)."""
    if isinstance(v, dict):
        return '{' + ', '.join(f'{k}: {ts(x)}' for k, x in v.items()) + '}'
    if isinstance(v, list):
        return '[' + ', '.join(ts(x) for x in v) + ']'
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return js_number(v)
    return json.dumps(v, ensure_ascii=False)


def main():
    print('''// Generated by test/contract/scripts/scorecard-1-golden.py from openapi/guides/scoring-model.md, not by
// the engine; edit the page and the script, not this file. FullFile and ThinFile are also the contract's
// examples (openapi/paths/scoring_score.yaml), which the mock answers.
import type { ScoreRequest, ScoreResult } from '@scenario-scoring/client';

/**
 * A scoring as the published model predicts it: the request and the result (scorecard-2, with its reasons,
 * statements in English). Its log record is salted, so its CID is no literal; the record is checked instead.
 */
export interface GoldenScoring {
  request: ScoreRequest;
  result: ScoreResult;
}

/** The policy version of every golden scoring, which the log record names. */
export const GOLDEN_POLICY_VERSION = '%s';

/** Every scoring the contract suite compares exactly, with μ and sd of the page's formulas for a reader. */
export const GOLDEN_SCORINGS: readonly GoldenScoring[] = [''' % POLICY_VERSION)
    for what, subject, context in CASES:
        result, mu, sd = score(context)
        print(f'  // {what}: μ = {mu:.6f}, sd = {sd:.6f}')
        print('  ' + ts({'request': {'subject': subject, 'context': context}, 'result': result}) + ',')
    print('];')


if __name__ == '__main__':
    main()
