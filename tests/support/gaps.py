"""The gaps between Logbook and the Hermes generations on their own fixtures (issue 44),
written by tests/oracle/find_gaps.py: category -> {fixture or (fixture, case): the
difference}. Each marks its test xfail(strict=True); a fixed gap makes it XPASS: remove the
line (or rerun the script)."""

import os
from collections import defaultdict

GAPS: dict = defaultdict(dict)
if not os.environ.get("LOGBOOK_IGNORE_GAPS"):
    GAPS.update({
        "conversation": {
            "hermes-v22-marks.db": "issue 44: 2 of 10 sessions show other rows (Logbook, Hermes): {'m_compacted': (32, 9), 'm_rewound': (6, 4)}",
            "hermes-v26-fresh.db": "issue 44: 2 of 44 sessions show other rows (Logbook, Hermes): {'g_compact': (28, 22), 'g_rewind': (6, 4)}",
            "hermes-v26-migrated.db": "issue 44: 5 of 234 sessions show other rows (Logbook, Hermes): {'20251007_090818_9b787bc8': (40, 17), '20251007_213202_a8cd618a': (35, 13), 'g_compact': (28, 22), 'g_rewind': (6, 4)}",
            "hermes-v31-cjk.db": "issue 44: 2 of 44 sessions show other rows (Logbook, Hermes): {'g_compact': (29, 22), 'g_rewind': (6, 4)}",
            "hermes-v31-fresh.db": "issue 44: 2 of 44 sessions show other rows (Logbook, Hermes): {'g_compact': (29, 22), 'g_rewind': (6, 4)}",
            "hermes-v31-migrated.db": "issue 44: 5 of 234 sessions show other rows (Logbook, Hermes): {'20251007_090818_9b787bc8': (40, 17), '20251007_213202_a8cd618a': (35, 13), 'g_compact': (29, 22), 'g_rewind': (6, 4)}",
        },
        "export": {
            "hermes-v26-fresh.db": "issue 44: 40 of 44 records differ in some value: ['g_open_cli', 'g_words', 'g_empty']",
            "hermes-v26-migrated.db": "issue 44: 196 of 234 records differ in some value: ['g_open_cli', 'g_words', 'g_empty']",
            "hermes-v31-cjk.db": "issue 44: record keys: Logbook lacks ['timings'], adds []",
            "hermes-v31-fresh.db": "issue 44: record keys: Logbook lacks ['timings'], adds []",
            "hermes-v31-migrated.db": "issue 44: record keys: Logbook lacks ['timings'], adds []",
        },
        "search": {
            ("hermes-v26-fresh.db", "it's"): "issue 44: the same 2 hits in another order",
            ("hermes-v26-fresh.db", "youer"): "issue 44: Logbook 0 hits, Hermes 1",
            ("hermes-v26-migrated.db", "it's"): "issue 44: Logbook 5 hits, Hermes 48",
            ("hermes-v26-migrated.db", "youer"): "issue 44: Logbook 0 hits, Hermes 1",
            ("hermes-v26-migrated.db", "库"): "issue 44: Logbook 26 hits, Hermes 25",
            ("hermes-v26-migrated.db", "数据库 NOT 库"): "issue 44: Logbook 26 hits, Hermes 25",
            ("hermes-v31-cjk.db", "it's"): "issue 44: the same 2 hits in another order",
            ("hermes-v31-cjk.db", "nginx qqqzzzxxx"): "issue 44: Logbook 0 hits, Hermes 6",
            ("hermes-v31-cjk.db", "youer"): "issue 44: Logbook 0 hits, Hermes 1",
            ("hermes-v31-cjk.db", "原因"): "issue 44: the same 2 hits in another order",
            ("hermes-v31-cjk.db", "大别山 OR 数据库"): "issue 44: the same 6 hits in another order",
            ("hermes-v31-cjk.db", "项目"): "issue 44: the same 2 hits in another order",
            ("hermes-v31-cjk.db", "구글 일정"): "issue 44: Logbook 2 hits, Hermes 1",
            ("hermes-v31-fresh.db", "it's"): "issue 44: the same 2 hits in another order",
            ("hermes-v31-fresh.db", "nginx qqqzzzxxx"): "issue 44: Logbook 0 hits, Hermes 6",
            ("hermes-v31-fresh.db", "youer"): "issue 44: Logbook 0 hits, Hermes 1",
            ("hermes-v31-migrated.db", "it's"): "issue 44: Logbook 5 hits, Hermes 48",
            ("hermes-v31-migrated.db", "nginx qqqzzzxxx"): "issue 44: Logbook 0 hits, Hermes 219",
            ("hermes-v31-migrated.db", "role=tool: billing"): "issue 44: the same 28 hits in another order",
            ("hermes-v31-migrated.db", "role=tool: created"): "issue 44: the same 13 hits in another order",
            ("hermes-v31-migrated.db", "role=tool: kubectl"): "issue 44: the same 13 hits in another order",
            ("hermes-v31-migrated.db", "youer"): "issue 44: Logbook 0 hits, Hermes 1",
            ("hermes-v31-migrated.db", "库"): "issue 44: Logbook 26 hits, Hermes 25",
            ("hermes-v31-migrated.db", "数据库 NOT 库"): "issue 44: Logbook 26 hits, Hermes 25",
        },
        "system prompt": {
            "hermes-v26-fresh.db": "issue 44: 40 of 44 sessions (40 with a prompt in Hermes) show another or no system prompt",
            "hermes-v26-migrated.db": "issue 44: 196 of 234 sessions (196 with a prompt in Hermes) show another or no system prompt",
            "hermes-v31-cjk.db": "issue 44: 41 of 44 sessions (41 with a prompt in Hermes) show another or no system prompt",
            "hermes-v31-fresh.db": "issue 44: 41 of 44 sessions (41 with a prompt in Hermes) show another or no system prompt",
            "hermes-v31-migrated.db": "issue 44: 197 of 234 sessions (197 with a prompt in Hermes) show another or no system prompt",
        },
        "usage": {
            "hermes-v26-fresh.db": "issue 44: (sessions, input, output) by model, (Logbook, Hermes): {'claude-sonnet-4.6': ((25, 55800, 13020), (25, 67800, 13920)), 'gemini-2.5-flash': ((0, 15300, 712), (1, 15300, 712)), 'gpt-4o-mini': ((4, 6700, 680), (5, 6700, 680)), 'gpt-5': ((10, 3",
            "hermes-v26-migrated.db": "issue 44: (sessions, input, output) by model, (Logbook, Hermes): {'claude-sonnet-4': ((19, 21600, 5400), (18, 21600, 5400)), 'claude-sonnet-4.6': ((73, 1163963, 75817), (70, 1175963, 76717)), 'gemini-2.5-flash': ((0, 15300, 712), (1, 15300, 712)), 'g",
            "hermes-v31-cjk.db": "issue 44: (sessions, input, output) by model, (Logbook, Hermes): {'claude-sonnet-4.6': ((25, 55800, 13020), (25, 67800, 13920)), 'gemini-2.5-flash': ((0, 15300, 712), (1, 15300, 712)), 'gpt-4o-mini': ((4, 6700, 680), (5, 6700, 680)), 'gpt-5': ((10, 3",
            "hermes-v31-fresh.db": "issue 44: (sessions, input, output) by model, (Logbook, Hermes): {'claude-sonnet-4.6': ((25, 55800, 13020), (25, 67800, 13920)), 'gemini-2.5-flash': ((0, 15300, 712), (1, 15300, 712)), 'gpt-4o-mini': ((4, 6700, 680), (5, 6700, 680)), 'gpt-5': ((10, 3",
            "hermes-v31-migrated.db": "issue 44: (sessions, input, output) by model, (Logbook, Hermes): {'claude-sonnet-4': ((19, 21600, 5400), (18, 21600, 5400)), 'claude-sonnet-4.6': ((73, 1163963, 75817), (70, 1175963, 76717)), 'gemini-2.5-flash': ((0, 15300, 712), (1, 15300, 712)), 'g",
        },
    })
