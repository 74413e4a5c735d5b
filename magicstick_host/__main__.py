from magicstick_host.cli.main import entry_point

entry_point()
