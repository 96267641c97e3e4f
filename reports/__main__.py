from reports.cli import entry

entry()
