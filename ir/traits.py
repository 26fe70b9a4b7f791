"""Op traits: properties of an op kind the passes and the verifier rely on."""


class Trait:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


PURE = Trait("Pure")                           # no side effects: DCE and CSE may act on it
COMMUTATIVE = Trait("Commutative")             # operands may be swapped
TERMINATOR = Trait("Terminator")               # must end its block
ISOLATED_FROM_ABOVE = Trait("IsolatedFromAbove")  # regions see no outer values
SYMBOL_TABLE = Trait("SymbolTable")            # its region holds named symbols
SYMBOL = Trait("Symbol")                       # has a sym_name attribute
NO_TERMINATOR = Trait("NoTerminator")          # blocks need no terminator
SINGLE_BLOCK = Trait("SingleBlock")            # each region holds one block
