from reports._cli import entry

entry()
