"""What each input and output of an exported graph is, as ``torch.export.graph_signature``."""
import dataclasses
import enum
from typing import Optional

__all__ = ["InputKind", "OutputKind", "TensorArgument", "ConstantArgument", "InputSpec",
           "OutputSpec", "ExportGraphSignature"]


class InputKind(enum.Enum):
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    CUSTOM_OBJ = enum.auto()
    TOKEN = enum.auto()


class OutputKind(enum.Enum):
    USER_OUTPUT = enum.auto()
    LOSS_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()
    GRADIENT_TO_PARAMETER = enum.auto()
    GRADIENT_TO_USER_INPUT = enum.auto()
    USER_INPUT_MUTATION = enum.auto()
    TOKEN = enum.auto()


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class ConstantArgument:
    name: str
    value: object


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: Optional[str]
    persistent: Optional[bool] = None

    def __post_init__(self):
        if self.kind == InputKind.BUFFER and self.persistent is None:
            raise AssertionError("InputSpec: a BUFFER input needs `persistent`")


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: Optional[str]


@dataclasses.dataclass
class ExportGraphSignature:
    """``input_specs`` in graph placeholder order (parameters, buffers, constants, then user
    inputs, as torch lifts them); ``output_specs`` for each tensor the graph returns."""
    input_specs: list
    output_specs: list

    def _names(self, kind):
        return [s.arg.name for s in self.input_specs if s.kind == kind]

    def _targets(self, kind):
        return [s.target for s in self.input_specs if s.kind == kind]

    @property
    def parameters(self):
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self):
        return self._targets(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self):
        return [s.target for s in self.input_specs
                if s.kind == InputKind.BUFFER and s.persistent is False]

    @property
    def lifted_tensor_constants(self):
        return self._targets(InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self):
        return self._names(InputKind.USER_INPUT)

    @property
    def user_outputs(self):
        return [s.arg.name for s in self.output_specs if s.kind == OutputKind.USER_OUTPUT]

    @property
    def inputs_to_parameters(self):
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self):
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self):
        return {s.arg.name: s.target for s in self.input_specs
                if s.kind == InputKind.CONSTANT_TENSOR}

    @property
    def buffers_to_mutate(self):
        return {}

    @property
    def user_inputs_to_mutate(self):
        return {}

    def __str__(self):
        lines = ["# inputs"] + [f"{s.arg.name}: {s.kind.name}"
                                + (f" target='{s.target}'" if s.target else "")
                                + (f" persistent={s.persistent}" if s.persistent is not None
                                   else "") for s in self.input_specs]
        lines += ["", "# outputs"] + [f"{s.arg.name}: {s.kind.name}" for s in self.output_specs]
        return "\n".join(lines) + "\n"
