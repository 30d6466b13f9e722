"""The session list and one conversation: the list's SQL and rules, kept orders, messages, lineage, origins, prompts, the census and the exports."""
