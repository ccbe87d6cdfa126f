"""``python -m ember.distributed.launch``: the deprecated ``torch.distributed.launch``, which is
``python -m ember.distributed.run`` except that, unless ``--use-env`` is given, each rank's
script also receives ``--local-rank=N`` as an argument (the legacy way of passing the local
rank; ``LOCAL_RANK`` is set either way)."""
import warnings

from .run import get_args_parser, run

__all__ = ["parse_args", "launch", "main"]


def parse_args(args):
    parser = get_args_parser()
    parser.prog = "python -m ember.distributed.launch"
    parser.add_argument("--use-env", "--use_env", default=False, action="store_true",
                        help="Pass the local rank only as LOCAL_RANK, not as --local-rank.")
    return parser.parse_args(args)


def launch(args):
    if args.no_python and not args.use_env:
        raise ValueError("When using the '--no-python' flag, you must also set the '--use-env' "
                         "flag.")
    if not args.use_env:
        # The rank's supervisor replaces the placeholder with the rank's local rank.
        args.training_script_args = ["--local-rank=${local_rank}", *args.training_script_args]
    run(args)


def main(args=None):
    warnings.warn("The module torch.distributed.launch is deprecated\n"
                  "and will be removed in future. Use torchrun.\n"
                  "Note that --use-env is set by default in torchrun.\n"
                  "If your script expects `--local-rank` argument to be set, please\n"
                  "change it to read from `os.environ['LOCAL_RANK']` instead. See \n"
                  "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
                  "further instructions\n", FutureWarning, stacklevel=2)
    launch(parse_args(args))


if __name__ == "__main__":
    main()
