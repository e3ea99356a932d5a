import './app.css';
import { mount } from 'svelte';
import App from './App.svelte';
import { currentTheme, applyTheme } from './lib/theme';

applyTheme(currentTheme());
mount(App, { target: document.getElementById('app')! });
