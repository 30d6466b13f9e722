"""The whole history as one: the services that answer a page over several stores (the live
file, archives, replicas) or several profiles. Each takes what it works on as arguments — the
stores, the list that names the stores not read, the request's budget (``short_of_time``) —
and keeps its own merged answers; none reads a request. The views read the request, call one
of these, and render:

* list_page.py: the session list across the stores of one profile (keyset pages merged,
  copies folded, a cursor per store);
* profiles_page.py: the session list across profiles (``profile=all``);
* stats.py: one statistics report across stores, each store's share;
* export.py: which store each exported session is read from, and a stream that goes on
  when one store fails;
* chats.py: chats, workspaces and people across stores;
* relatives.py: which store holds a session, its parent and children kept in other stores.

Which sessions are copies, and which conversations go on from one store into another, is
worked out in one place (webui.db.stores.history); ``webui.db.deadline.short_of_time`` says when
a request has no time left to ask one more store."""
