"""ember.optim: optimization algorithms (torch.optim) and learning-rate schedulers."""
from ember.optim import lr_scheduler as lr_scheduler
from ember.optim.adadelta import Adadelta as Adadelta
from ember.optim.adagrad import Adagrad as Adagrad
from ember.optim.adam import Adam as Adam
from ember.optim.adamw import AdamW as AdamW
from ember.optim.lbfgs import LBFGS as LBFGS
from ember.optim.optimizer import Optimizer as Optimizer
from ember.optim.rmsprop import RMSprop as RMSprop
from ember.optim.sgd import SGD as SGD

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "LBFGS", "lr_scheduler", "Optimizer", "RMSprop", "SGD"]
