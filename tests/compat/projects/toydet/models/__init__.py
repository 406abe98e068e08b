from .detector import ToyDetector, ToyTeacherStudent

__all__ = ['ToyDetector', 'ToyTeacherStudent']
