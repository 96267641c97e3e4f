from reports._start import entry

entry()
