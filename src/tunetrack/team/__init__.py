"""A team's dashboard: who may read, edit and delete which projects' runs (``roles``), the team file
that says so and how people sign in (``file``), and the personal tokens people sign in with
(``tokens``). Pure logic over two small local files: the server (``ui.team``) and the CLI
(``tunetrack token``) use it; nothing here reads the store."""
