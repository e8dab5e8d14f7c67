from engine.cli.main import script

script()
