# SPDX-License-Identifier: GPL-2.0
# fish completion for cowlink(1): subcommands, their own options, and file
# names (directories alone where only a directory will do).  Installed as
# $(datarootdir)/fish/vendor_completions.d/cowlink.fish, which fish reads
# for every data directory of XDG_DATA_DIRS (/usr/local/share and
# /usr/share by default).

set -l cmds get set clear clone status du break changes discard

# No file names where a subcommand is still to come.
complete -c cowlink -f

complete -c cowlink -n __fish_use_subcommand -s h -l help -d 'display help and exit'
complete -c cowlink -n __fish_use_subcommand -s V -l version -d 'output version information and exit'
complete -c cowlink -n __fish_use_subcommand -a get -d 'show the COW flag of each path'
complete -c cowlink -n __fish_use_subcommand -a set -d 'set the COW flag'
complete -c cowlink -n __fish_use_subcommand -a clear -d 'clear the COW flag'
complete -c cowlink -n __fish_use_subcommand -a clone -d 'clone a directory as cow links'
complete -c cowlink -n __fish_use_subcommand -a status -d 'list what is still shared'
complete -c cowlink -n __fish_use_subcommand -a du -d 'bytes that deleting each path would free'
complete -c cowlink -n __fish_use_subcommand -a break -d 'give each file its own copy now'
complete -c cowlink -n __fish_use_subcommand -a changes -d 'list what a clone changed against its pristine tree'
complete -c cowlink -n __fish_use_subcommand -a discard -d 'remove a clone and everything in it'

# Each subcommand's own options, as 'cowlink COMMAND --help' lists them.
complete -c cowlink -n "__fish_seen_subcommand_from $cmds" -s h -l help -d 'display help and exit'
complete -c cowlink -n '__fish_seen_subcommand_from get set clear break' -s R -l recursive -d 'walk directories'
complete -c cowlink -n '__fish_seen_subcommand_from get changes' -s 0 -l null -d 'end records with NUL, unescaped'
complete -c cowlink -n '__fish_seen_subcommand_from set' -s 0 -l null -d 'the records of --from end with NUL'
complete -c cowlink -n '__fish_seen_subcommand_from set' -l from -r -F -d 'replay the records of get (- for stdin)'
complete -c cowlink -n '__fish_seen_subcommand_from clone break' -s v -l verbose -d 'report what was done'
complete -c cowlink -n '__fish_seen_subcommand_from clone' -l progress -d 'show progress on a terminal'
complete -c cowlink -n '__fish_seen_subcommand_from status changes' -l json -d 'print one JSON object'

# Operands: any file, or a directory for clone, changes and discard.
complete -c cowlink -n '__fish_seen_subcommand_from get set clear status du break' -F
complete -c cowlink -n '__fish_seen_subcommand_from clone changes discard' -a '(__fish_complete_directories)'
