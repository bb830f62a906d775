"""`adgrad completion bash|zsh|fish`: a completion script made from the parser itself."""


def add_arguments(parser, command):
    parser.description = 'Print a completion script for bash, zsh or fish.'
    parser.epilog = """examples:
  adgrad completion bash > ~/.local/share/bash-completion/completions/adgrad
  adgrad completion zsh > "${fpath[1]}/_adgrad"
  adgrad completion fish > ~/.config/fish/completions/adgrad.fish"""
    parser.add_argument('shell', choices=('bash', 'zsh', 'fish'))


def run(args, env):
    import shtab  # generates the script from the parser itself, so it never drifts

    from .common import Exit
    from .main import full_parser
    env.stdout.write(shtab.complete(full_parser(env), shell=args.shell))
    return Exit.OK
